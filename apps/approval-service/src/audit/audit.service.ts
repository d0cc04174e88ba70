import { hash } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { Actor, AuditItem } from '@skald/contracts';
import { ownerScope } from '../bypasses/bypasses.service';
import { AuditEntry, AuditRepository } from './audit.repository';

export const AUDIT_FLUSH_MS = Symbol('AUDIT_FLUSH_MS');
const MAX_BATCH = 500;
const MAX_BUFFER = 20_000;

/** `sha256:` + 16 hex of the arguments' JSON: enough to tell calls apart without storing them twice. */
export function argsDigest(args: unknown): string {
  const text = typeof args === 'string' ? args : JSON.stringify(args ?? null);
  // one-shot: no Hash object per decision
  return `sha256:${hash('sha256', text, 'hex').slice(0, 16)}`;
}

/**
 * The audit log. Human decisions are written in the transaction that records them. Automatic
 * decisions of `approval.check` are buffered and written in batches every `flushMs` (default
 * 200 ms) so that a check never waits for a write; a crash can lose at most that window of
 * automatic entries (never a human one). The buffer is flushed on shutdown.
 */
@Injectable()
export class AuditService implements OnModuleInit, OnApplicationShutdown {
  private buffer: AuditEntry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private readonly flushMs: number;

  constructor(
    private readonly repo: AuditRepository,
    @Optional() @Inject(AUDIT_FLUSH_MS) flushMs?: number,
  ) {
    this.flushMs = flushMs ?? 200;
  }

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  /** Fire and forget: automatic decisions. */
  record(entry: AuditEntry): void {
    if (this.buffer.length >= MAX_BUFFER) this.buffer.shift();
    this.buffer.push({ ...entry, at: entry.at ?? new Date() });
  }

  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      while (this.buffer.length > 0) {
        const batch = this.buffer.splice(0, MAX_BATCH);
        try {
          await this.repo.insert(batch);
        } catch {
          this.buffer.unshift(...batch);
          return;
        }
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  async page(actor: Actor, sessionId: string | undefined, page: number, perPage: number) {
    await this.flush();
    const r = await this.repo.page({ userId: ownerScope(actor), sessionId, page, perPage });
    return {
      total: r.total,
      items: r.items.map((a): AuditItem => ({
        id: a.id,
        at: a.at.toISOString(),
        session_id: a.sessionId,
        tool_call_id: a.toolCallId,
        tool_name: a.toolName,
        args_digest: a.argsDigest,
        decision: a.decision,
        by: a.by,
        ...(a.actorUserId ? { actor_user_id: a.actorUserId } : {}),
        ...(a.ruleId ? { rule_id: a.ruleId } : {}),
        ...(a.note ? { note: a.note } : {}),
      })),
    };
  }
}
