import { randomUUID } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { LeaseLostError, LoopDeps, recoverTurn, resolveLoopConfig, runTurn, TurnOutcome } from '@skald/agent-loop';
import { LlmManager } from '@skald/llm';
import { Bus } from '@skald/messaging';
import { queryRows } from '@skald/persistence';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_INSTANCE, WORKER_LOGGER, WorkerConfig } from '../config';
import { Lease, LeaseRepository } from '../lease/lease.repository';
import { BuiltinCatalog } from '../ports/builtin-catalog';
import { LlmAdapter } from '../ports/llm-adapter';
import { NatsGate } from '../ports/nats-gate';
import { ParkingHumanWait } from '../ports/parking-human-wait';
import { RunnerToolSet } from '../ports/runner-tool-set';
import { PgSessionStore } from '../store/pg-session-store';
import { EventAnnouncer } from './event-announcer';

const OS = `${process.platform} ${process.arch}`;

/**
 * Drives sessions: takes the lease (one driver per session across replicas), runs turns until the
 * session has nothing left to do, heartbeats the lease meanwhile, releases it. A lost lease aborts
 * the turn at once; the stale worker writes nothing more (its commits are fenced).
 */
@Injectable()
export class TurnDriver implements OnApplicationShutdown {
  private readonly driving = new Map<string, AbortController>();
  private readonly llm: LlmAdapter;
  private readonly catalog = new BuiltinCatalog();
  private draining = false;

  constructor(
    private readonly ds: DataSource,
    private readonly bus: Bus,
    private readonly leases: LeaseRepository,
    private readonly announcer: EventAnnouncer,
    llmManager: LlmManager,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_INSTANCE) private readonly instance: string,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {
    this.llm = new LlmAdapter(llmManager);
  }

  get activeCount(): number {
    return this.driving.size;
  }

  isDriving(sessionId: string): boolean {
    return this.driving.has(sessionId);
  }

  /** Aborts the turn this worker drives for the session (a /stop). */
  abort(sessionId: string): boolean {
    const c = this.driving.get(sessionId);
    if (!c) return false;
    c.abort();
    return true;
  }

  /**
   * Drives the session if nobody else does. Returns at once when another worker holds the lease:
   * that worker drains the inbox at its next round boundary.
   */
  async drive(sessionId: string): Promise<void> {
    if (this.draining || this.driving.has(sessionId)) return;
    const lease = await this.leases.acquire(sessionId, this.instance, this.config.SKALD_LEASE_TTL_MS);
    if (!lease) return;
    const controller = new AbortController();
    this.driving.set(sessionId, controller);
    const heartbeat = this.startHeartbeat(lease, controller);
    let again = false;
    let failed = false;
    try {
      again = await this.runUntilIdle(lease, controller.signal);
    } catch (e) {
      failed = true;
      if (e instanceof LeaseLostError) this.log.warn({ sessionId, epoch: lease.epoch }, 'lease lost; stopped driving');
      else
        this.log.error(
          {
            sessionId,
            err: e instanceof Error ? e.message : String(e),
            stack: e instanceof Error ? e.stack : undefined,
          },
          'turn failed',
        );
    } finally {
      clearInterval(heartbeat);
      this.driving.delete(sessionId);
      await this.leases.release(lease).catch(() => undefined);
    }
    // Input that arrived while we held the lease but after our last look: take it now. After a
    // failure the sweep retries later instead, so a poisoned session cannot spin a worker.
    if (!failed && (again || (await this.hasQueuedInput(sessionId)))) setImmediate(() => void this.drive(sessionId));
  }

  /** Runs turns while there is work; true when more work may have arrived meanwhile. */
  private async runUntilIdle(lease: Lease, signal: AbortSignal): Promise<boolean> {
    const sessionId = lease.sessionId;
    for (let turns = 0; turns < 100; turns++) {
      if (signal.aborted) return false;
      const store = new PgSessionStore(this.ds, { owner: lease.owner, epoch: lease.epoch }, (ev) =>
        this.announcer.announce(ev),
      );
      const session = await store.getSession(sessionId);
      const deps = this.deps(store, session.userId);
      const turnId = randomUUID();
      const log = this.log.child({ sessionId, userId: session.userId, turnId, epoch: lease.epoch });
      let outcome: TurnOutcome;
      if (session.turnState === 'running') {
        log.info({}, 'recovering an unfinished turn');
        outcome = await recoverTurn(deps, { sessionId, signal });
      } else if (session.turnState === 'parked') {
        return false;
      } else {
        const next = (await store.listInbox(sessionId))[0];
        if (!next) return false;
        log.info({ messageId: next.id }, 'turn started');
        outcome = await runTurn(deps, { sessionId, input: { kind: 'inbox', inboxId: next.id }, signal });
      }
      log.info({ outcome: outcome.kind }, 'turn ended');
      if (outcome.kind === 'parked' || outcome.kind === 'cancelled') return false;
    }
    return true;
  }

  private deps(store: PgSessionStore, userId: string): LoopDeps {
    return {
      store,
      gate: new NatsGate(this.bus, 'user'),
      human: new ParkingHumanWait(),
      tools: new RunnerToolSet(this.bus, 'user'),
      llm: this.llm,
      events: this.announcer.sinkFor(userId),
      catalog: this.catalog,
      clock: {
        now: () => new Date(),
        timeZone: () => this.config.SKALD_TIMEZONE ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
      },
      ids: { newId: () => randomUUID() },
      config: resolveLoopConfig({
        maxToolRounds: this.config.SKALD_MAX_TOOL_ROUNDS,
        maxHistoryMessages: this.config.SKALD_MAX_HISTORY_MESSAGES,
        maxToolResultChars: this.config.SKALD_MAX_TOOL_RESULT_CHARS ?? null,
        os: OS,
      }),
    };
  }

  private startHeartbeat(lease: Lease, controller: AbortController): NodeJS.Timeout {
    const every = Math.max(200, Math.floor(this.config.SKALD_LEASE_TTL_MS / 3));
    const timer = setInterval(() => {
      void this.leases.renew(lease, this.config.SKALD_LEASE_TTL_MS).then(
        (ok) => {
          if (!ok) {
            this.log.warn({ sessionId: lease.sessionId, epoch: lease.epoch }, 'lease not renewed; aborting the turn');
            controller.abort();
          }
        },
        (e: unknown) => this.log.warn({ sessionId: lease.sessionId, err: String(e) }, 'lease renewal failed'),
      );
    }, every);
    timer.unref();
    return timer;
  }

  private async hasQueuedInput(sessionId: string): Promise<boolean> {
    if (this.draining) return false;
    const rows = await queryRows(
      this.ds,
      `SELECT 1 FROM session_inbox i JOIN sessions s ON s.id = i.session_id
        WHERE i.session_id = $1 AND i.status = 'queued' AND s.turn_state = 'finished' LIMIT 1`,
      [sessionId],
    ).catch(() => []);
    return rows.length > 0;
  }

  /** Stops taking sessions; aborts nothing — SIGTERM drain waits for turns in `drainAll`. */
  async drainAll(graceMs: number): Promise<void> {
    this.draining = true;
    const deadline = Date.now() + graceMs;
    while (this.driving.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }

  onApplicationShutdown(): void {
    this.draining = true;
  }
}
