import { hash } from 'node:crypto';
import type { z } from 'zod';
import { Inject, Injectable, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { Actor, AuditReply, AuditRequest, DELETED_RULE_NAME } from '@skald/contracts';
import { sqlState } from '@skald/messaging/database-input';
import type { Logger } from '@skald/service-kit';
import { ownerScope } from '../bypasses/bypasses.service';
import { ApprovalMetrics } from '../approval-metrics';
import { APPROVAL_LOGGER } from '../config';
import { ApprovalError } from '../errors';
import { BUILT_IN_RULES } from '../rules/rule-engine';
import { AuditEntry, AuditRepository } from './audit.repository';

export const AUDIT_FLUSH_MS = Symbol('AUDIT_FLUSH_MS');
const MAX_BATCH = 500;
/** Automatic decisions kept while Postgres cannot be written; past it, tool calls are refused. */
export const AUDIT_MAX_BUFFER = 20_000;

/** `sha256:` + 16 hex of the arguments' JSON: enough to tell calls apart without storing them twice. */
export function argsDigest(args: unknown): string {
  const text = typeof args === 'string' ? args : JSON.stringify(args ?? null);
  // one-shot: no Hash object per decision
  return `sha256:${hash('sha256', text, 'hex').slice(0, 16)}`;
}

/**
 * The audit log. Human decisions are written in the transaction that records them. Automatic
 * decisions of `approval.check` are buffered and written in batches every `flushMs` (default
 * 200 ms) so that a check never waits for a write (but a `require`, which waits for a person
 * anyway, see {@link recordNow}); a crash can lose at most that window of
 * automatic entries (never a human one). The buffer is flushed on shutdown.
 *
 * Nothing decided is dropped to make room: while Postgres cannot be written, entries are kept up to
 * {@link AUDIT_MAX_BUFFER}, and then the gate refuses tool calls ({@link accepting}) until the log
 * is written again. A row Postgres refuses for what it holds (a constraint, a value) would fail its
 * batch on every retry: the batch is split until that row stands alone, and it alone is set aside,
 * with an error in the log naming it.
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
    @Optional() @Inject(APPROVAL_LOGGER) private readonly log?: Logger,
    @Optional() metrics?: ApprovalMetrics,
  ) {
    this.flushMs = flushMs ?? 200;
    metrics?.watchAudit(() => this.buffer.length);
  }

  /** Automatic decisions not yet written. */
  get pending(): number {
    return this.buffer.length;
  }

  /** False while the buffer is full: a decision taken now could not be audited. */
  get accepting(): boolean {
    return this.buffer.length < AUDIT_MAX_BUFFER;
  }

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  /** Fire and forget: automatic decisions. False, and nothing kept, when the buffer is full. */
  record(entry: AuditEntry): boolean {
    if (!this.accepting) return false;
    this.buffer.push({ ...entry, at: entry.at ?? new Date() });
    return true;
  }

  /**
   * A decision a person will read about (a `require`: the inbox item it becomes names the rule that
   * asked, read from this row) is written before the check answers, not a flush later; while
   * Postgres cannot be reached it waits in the buffer like any other. False, and nothing kept, when
   * the buffer is full.
   */
  async recordNow(entry: AuditEntry): Promise<boolean> {
    if (!this.accepting) return false;
    const unwritten = await this.write([{ ...entry, at: entry.at ?? new Date() }]);
    this.buffer.push(...unwritten);
    return true;
  }

  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      while (this.buffer.length > 0) {
        const batch = this.buffer.splice(0, MAX_BATCH);
        const unwritten = await this.write(batch);
        if (unwritten.length > 0) {
          this.buffer.unshift(...unwritten);
          return; // Postgres cannot be reached: the next tick tries again
        }
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /**
   * Writes a batch; answers what is left to write when Postgres cannot be reached. A batch refused
   * for its content is halved until the refused rows stand alone (at most 2 × its size inserts).
   */
  private async write(batch: AuditEntry[]): Promise<AuditEntry[]> {
    try {
      await this.repo.insert(batch);
      return [];
    } catch (e) {
      if (!refusedForContent(e)) return batch;
      if (batch.length === 1) {
        const [x] = batch;
        this.log?.error(
          {
            // the code and message only: the driver's error also carries the batch's parameters
            sqlState: sqlState(e),
            error: e instanceof Error ? e.message : String(e),
            userId: x.userId,
            sessionId: x.sessionId,
            toolCallId: x.toolCallId,
            toolName: x.toolName,
            decision: x.decision,
            by: x.by,
          },
          'an audit entry Postgres refused was set aside',
        );
        return [];
      }
      const half = Math.ceil(batch.length / 2);
      const first = await this.write(batch.slice(0, half));
      if (first.length > 0) return [...first, ...batch.slice(half)];
      return this.write(batch.slice(half));
    }
  }

  /**
   * A page of the audit for `actor` (their own rows; an admin: every user's, or one user's with
   * `user_id`), filtered; each rule by its name now (a rule no longer stored as
   * {@link DELETED_RULE_NAME}; the note, the gate's reason, keeps the name it had when it decided).
   */
  async page(q: Omit<z.infer<typeof AuditRequest>, 'actor'>, actor: Actor): Promise<z.infer<typeof AuditReply>> {
    if (actor.role !== 'admin' && q.user_id !== undefined && q.user_id !== actor.userId)
      throw new ApprovalError('forbidden', "another user's audit is for admins", 'user_id');
    await this.flush();
    const r = await this.repo.page({
      userId: ownerScope(actor),
      sessionId: q.session_id,
      filterUserId: q.user_id,
      tool: q.tool,
      decision: q.decision,
      since: q.since,
      until: q.until,
      before: q.before,
      limit: q.limit,
    });
    return {
      has_more: r.hasMore,
      items: r.items.map((a) => {
        const name = a.ruleId ? nameOfRule(a.ruleId, a.ruleName) : undefined;
        return {
          id: a.id,
          at: a.at.toISOString(),
          user_id: a.userId,
          session_id: a.sessionId,
          tool_call_id: a.toolCallId,
          tool_name: a.toolName,
          args_digest: a.argsDigest,
          decision: a.decision,
          by: a.by,
          ...(a.actorUserId ? { actor_user_id: a.actorUserId } : {}),
          ...(a.channel ? { channel: a.channel } : {}),
          ...(a.ruleId ? { rule_id: a.ruleId } : {}),
          ...(name !== undefined ? { rule_name: name } : {}),
          ...(a.note ? { note: a.note } : {}),
          ...(a.edit ? { edit: { args_digest: a.edit.argsDigest, diff: a.edit.diff } } : {}),
        };
      }),
    };
  }
}

/** A rule's stored name, a built-in rule's from the code, else {@link DELETED_RULE_NAME}. */
export function nameOfRule(id: string, stored: string | null): string {
  return stored ?? BUILT_IN_RULES.find((b) => b.id === id)?.name ?? DELETED_RULE_NAME;
}

/**
 * A statement Postgres answered with an error about the data (SQLSTATE class 22: data exception;
 * 23: integrity constraint), as opposed to not answering at all (connection refused or lost, the
 * server shutting down or out of resources), which a retry may cure.
 */
function refusedForContent(e: unknown): boolean {
  return /^2[23]/.test(sqlState(e) ?? '');
}
