import { randomUUID } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { LeaseLostError, LoopDeps, runTurn, SessionInfo, TurnOutcome } from '@skald/agent-loop';
import { LlmManager } from '@skald/llm';
import { Bus } from '@skald/messaging/bus-port';
import { loggerWithIds } from '@skald/service-kit/log-ids';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_INSTANCE, WORKER_LOGGER, WorkerConfig } from '../config';
import { Lease, LeaseRepository } from '../lease/lease.repository';
import { LlmService } from '../llm/llm.service';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import { AgentCatalogService, AgentsRead } from '../agents/agent-catalog.service';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import { INBOX_SNAPSHOT_MS, PgSessionStore } from '../loop-adapters';
import { HistoryCarry } from '../loop-adapters/session-store/history-carry';
import { toUserAgentRow } from '../agents/user-agents.repository';
import type { EnteredFirst, PrimedStart } from '../submit/entered-first';
import { Driving, newDriving } from './driving';
import { EventAnnouncer } from './event-announcer';
import { InboxIntake } from './inbox-intake';
import { LeaseKeeping } from './lease-keeping';
import { LoopDepsBuilder } from './loop-deps';
import { refusedStep } from './refused-step';
import { TurnAnnouncements } from './turn-announcements';
import { jobRunOf, type TurnCause } from './turn-finished-notice';
import { TurnMetrics } from './turn-metrics';
import { TurnRecovery } from './turn-recovery';
import type { Role } from '@skald/contracts';

/**
 * Drives sessions: takes the lease (one driver per session across replicas), runs turns until the
 * session has nothing left to do, heartbeats the lease meanwhile, releases it. A lost lease aborts
 * the turn at once; the stale worker writes nothing more (its commits are fenced).
 *
 * The driver orchestrates; each of its parts is one file: the lease's heartbeat and a command's
 * take (lease-keeping.ts), which queued input starts a turn and when (inbox-intake.ts), the loop's
 * dependencies (loop-deps.ts), recovery and resumption of turns it did not start
 * (turn-recovery.ts), and what it tells others (turn-announcements.ts).
 */
@Injectable()
export class TurnDriver implements OnApplicationShutdown {
  private readonly driving = new Map<string, Driving>();
  /** Sessions whose lease this worker is asking for (a submit and its doorbell arrive together). */
  private readonly acquiring = new Set<string>();
  /** Each session's history from the end of its last turn here, for its next turn's start read. */
  private readonly carry = new HistoryCarry();
  private draining = false;
  private readonly lease: LeaseKeeping;
  private readonly intake: InboxIntake;
  private readonly loopDeps: LoopDepsBuilder;
  private readonly recovery: TurnRecovery;
  private readonly announce: TurnAnnouncements;

  constructor(
    ds: Database,
    private readonly bus: Bus,
    private readonly leases: LeaseRepository,
    private readonly turnState: TurnStateRepository,
    announcer: EventAnnouncer,
    private readonly metrics: TurnMetrics,
    catalog: AgentCatalogService,
    llmManager: LlmManager,
    llmService: LlmService,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_INSTANCE) private readonly instance: string,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
    /**
     * The ledger rows of answered round calls, written with their messages' commits. (Typed
     * without `| null`: a union type would hide the class from Nest's injection metadata.)
     */
    @Optional() usage?: LlmUsageRepository,
  ) {
    metrics.countDriving(() => this.driving.size);
    this.announce = new TurnAnnouncements(bus, announcer);
    this.lease = new LeaseKeeping(leases, turnState, config, instance, log, {
      draining: () => this.draining,
      driving: (sessionId) => this.driving.has(sessionId),
    });
    this.intake = new InboxIntake(ds, config, announcer, this.announce);
    this.loopDeps = new LoopDepsBuilder({
      ds,
      bus,
      announcer,
      metrics,
      catalog,
      llmManager,
      llmService,
      config,
      log,
      usage: usage ?? null,
      draining: () => this.draining,
    });
    this.recovery = new TurnRecovery(bus, turnState, this.loopDeps, this.announce, log);
  }

  get activeCount(): number {
    return this.driving.size;
  }

  isDriving(sessionId: string): boolean {
    return this.driving.has(sessionId);
  }

  /**
   * Whether this worker will read the session's inbox again after now without a doorbell: it drives
   * the session and is not draining — its release (`releaseAndCheckWork`, or a command's check) is
   * sent after the driving ends, so its snapshot follows anything committed before this call. A
   * session it is only asking the lease for does not count: the ask may lose to another holder,
   * whose release may have read before the message, and then the doorbell is all there is.
   */
  looksAgain(sessionId: string): boolean {
    return !this.draining && this.driving.has(sessionId);
  }

  /** Aborts the turn this worker drives for the session (a /stop). */
  abort(sessionId: string): boolean {
    const d = this.driving.get(sessionId);
    if (!d) return false;
    d.turn.abort();
    return true;
  }

  /**
   * What the submit's statement needs to take the session's lease for this worker
   * (InboxRepository.submitToActive): the owner, the TTL, and the sessions this worker drives or is
   * asking for (never taken by a submit: a session is driven once per worker), and `enter`: the
   * statement may also make the turn's first commit (the root frame's id if it opens one, the time
   * the message enters), which `driveWith` then starts the turn from. Null while draining.
   */
  leaseAsk(userId?: string): {
    owner: string;
    ttlMs: number;
    busy: string[];
    carried: string[];
    enter: { frameId: string; at: Date };
  } | null {
    if (this.draining) return null;
    return {
      owner: this.instance,
      ttlMs: this.config.SKALD_LEASE_TTL_MS,
      busy: [...this.driving.keys(), ...this.acquiring],
      // The frames whose rows this worker carries for the user's sessions: the statement's start read leaves them out.
      carried: userId === undefined ? [] : this.carry.frameIdsOf(userId),
      enter: { frameId: randomUUID(), at: new Date() },
    };
  }

  /**
   * Drives the session if nobody else does. Returns at once when another worker holds the lease:
   * that worker drains the inbox at its next round boundary.
   */
  async drive(sessionId: string): Promise<void> {
    const driven = this.driving.get(sessionId);
    // Driven here: the doorbell is remembered, and rung again after the release if it came after
    // the driver's last look at the inbox (see driveWith).
    if (driven) driven.rangAt = performance.now();
    if (this.draining || driven || this.acquiring.has(sessionId)) return;
    // One ask at a time: the ask under way, if it gets the lease, reads the inbox after it.
    this.acquiring.add(sessionId);
    let lease: Lease | null;
    try {
      lease = await this.leases.acquire(sessionId, this.instance, this.config.SKALD_LEASE_TTL_MS);
    } finally {
      this.acquiring.delete(sessionId);
    }
    if (lease) await this.driveWith(lease);
  }

  /**
   * Announces the echo of a message the submit's statement entered, with the submit's answer (see
   * TurnAnnouncements.entered); `driveWith` then does not announce it again.
   */
  announceEntered(primed: PrimedStart): void {
    this.announce.entered(primed);
  }

  /**
   * Drives the session with a lease already taken — by `drive`, or by the submit's statement, which
   * hands its lease here at once. Every read of the turn comes after the take (the start read is
   * its own, later statement, so it sees the previous holder's last commit). A lease this worker
   * may not drive now (draining, or the session already driven here under an older, expired
   * lease) is released at once and the doorbell rung, so no lease outlives its use.
   *
   * When the submit's statement also entered the message (`primed.entered`), its echo is announced
   * first, and the turn starts from that commit; a turn this worker does not drive after all is
   * running in the table and recovered by the next driver, as after a crash.
   */
  async driveWith(lease: Lease, primed: PrimedStart | null = null): Promise<void> {
    const { sessionId } = lease;
    this.announce.enteredNow(primed);
    if (this.draining || this.driving.has(sessionId)) {
      await this.leases.release(lease).catch(() => undefined);
      this.announce.ring(sessionId, this.draining ? 'handover' : 'input');
      return;
    }
    if (lease.tookOver) this.metrics.leaseTakeovers.inc();
    const d = newDriving(lease, this.log);
    this.driving.set(sessionId, d);
    const heartbeat = this.lease.startHeartbeat(d);
    let again = false;
    let failed = false;
    let work = false;
    try {
      again = await this.runUntilIdle(d, primed);
    } catch (e) {
      failed = true;
      if (e instanceof LeaseLostError) this.log.warn({ ...d.ids, epoch: lease.epoch }, 'lease lost; stopped driving');
      else {
        this.log.error(
          {
            ...d.ids,
            err: e instanceof Error ? e.message : String(e),
            stack: e instanceof Error ? e.stack : undefined,
          },
          'turn failed',
        );
        const sqlState = refusedStep(e);
        if (sqlState !== null && !d.lost.signal.aborted)
          await this.recovery
            .countRefusedStep(d, e, sqlState)
            .catch((err: unknown) => this.log.warn({ ...d.ids, err: String(err) }, 'could not record a failed commit'));
      }
    } finally {
      clearInterval(heartbeat);
      this.driving.delete(sessionId);
      // A slot reserved for a turn that did not start goes back (fenced by the lease, still ours).
      if (await this.intake.letGo(lease).catch(() => false)) d.freed = true;
      // One statement: the release, and whether input arrived after our last look.
      work = await this.leases.releaseAndCheckWork(lease).catch(() => false);
    }
    if (this.draining) {
      // Hand the session to another replica at once.
      this.announce.ring(sessionId, 'handover');
      return;
    }
    // Input that arrived while we held the lease but after our last look: take it now. After a
    // failure the sweep retries later instead, so a poisoned session cannot spin a worker.
    // The release's check reads in its statement's snapshot, which may predate the commit of a
    // message whose own statement saw the lease still held (so did not take it): that message's
    // doorbell, if it rang here after the last look, is the only trace of it.
    const missed = d.rangAt > 0 && d.rangAt >= (d.store?.lastLookAt ?? 0);
    // A slot freed here: one session of the user held back by the cap is woken (the sweep is the backstop).
    if (d.freed && d.ids.userId) void this.intake.wakeWaiting(d.ids.userId, sessionId);
    // Held back by the cap: driven again only when a doorbell rang after that (a slot freed), never
    // by its own queued input (which would spin); else a slot's doorbell or the sweep drives it.
    if (d.cappedAt > 0) {
      if (!failed && d.rangAt > d.cappedAt) setImmediate(() => void this.drive(sessionId));
      return;
    }
    if (!failed && (again || work || missed)) setImmediate(() => void this.drive(sessionId));
  }

  /** Runs turns while there is work; true when more work may have arrived meanwhile. */
  private async runUntilIdle(d: Driving, primed: PrimedStart | null = null): Promise<boolean> {
    const sessionId = d.lease.sessionId;
    for (let turns = 0; turns < 100; turns++) {
      if (d.lost.signal.aborted || this.draining) return false;
      d.ids = { sessionId };
      d.log = loggerWithIds(this.log, d.ids);
      // The turn's logger when the event is announced (the turn's ids are known after its start read).
      const store = this.loopDeps.store(d.lease, () => d.log);
      d.store = store;
      // One statement: the session, its stop flag and owner role, its queued inbox, and what the
      // turn reads before its first model call (primed in the store and the catalog).
      // The first turn's read may have been taken by the submit's statement with the lease (`primed`).
      const carried = this.carry.take(sessionId, d.lease.epoch);
      const early =
        turns === 0 && primed ? store.startFrom(sessionId, primed.row, primed.carried, carried, primed.at) : null;
      // The statement may also have entered the message (the turn's first commit): the store knows its rows.
      const entered = turns === 0 ? (primed?.entered ?? null) : null;
      if (early && entered) store.primeEntered(entered);
      const start = early ?? (await store.startTurn(sessionId, carried));
      const { session, stop, role } = start;
      d.turn = new AbortController();
      if (stop) {
        if (session.turnState === 'finished') await this.turnState.clearStop(sessionId);
        else d.turn.abort();
      }
      const admitted = await this.intake.admit(d, start);
      if (!admitted) return false;
      const { next } = admitted;
      // A turn is named by the message that started it: a recovered or resumed turn keeps its id.
      d.ids = { userId: session.userId, sessionId, turnId: next?.id ?? session.turnId ?? undefined };
      d.log = loggerWithIds(this.log, d.ids);
      const agentsRead = start.complete
        ? { rows: start.userAgents.map(toUserAgentRow), at: start.at, freshMs: INBOX_SNAPSHOT_MS }
        : null;
      // Where a turn started here gets its history: kept here since the session's last turn (carry affinity) or read whole.
      const history = carried.size > 0 ? 'carried' : 'read';
      // A turn started by a job's delivered result (a synthetic call) is the job's news, told as job_finished.
      const cause = next?.toolResult ? 'job_delivery' : 'input';
      const step = await this.runTurnOnce(d, store, session, role, next?.id, agentsRead, entered, history, cause);
      // A turn ran here (ended, parked or idle): its slot, if it held one, is free now.
      d.freed = true;
      if (step === 'stop') return false;
      // The turn ended and its last commit (one statement) saw no queued input: nothing more to do
      // now — input queued after that commit is found by the release (releaseAndCheckWork).
      if (store.queuedAtLastCommit()?.length === 0) return false;
    }
    return true;
  }

  /** A driver starts a turn from input: its log line says where the turn's history came from. */
  private starting(log: Logger, history: 'carried' | 'read'): void {
    log.info({ history }, 'turn started');
  }

  /**
   * A turn started: its input entered the conversation (counted once per turn, by the driver whose
   * commit entered it; `skald_turns_started_total` is then one per answered input).
   */
  private started(history: 'carried' | 'read'): void {
    this.metrics.turnsStarted.inc();
    this.metrics.turnHistory.inc({ from: history });
  }

  /**
   * One turn of the session: recovers an unfinished one, resumes a parked one a human answered, or
   * starts one from the inbox item `inboxId` — or, when the submit's statement entered it
   * (`entered`, and the session's running turn is still named by it), from that first commit.
   * `stop` when the session has nothing more to do now.
   */
  private async runTurnOnce(
    d: Driving,
    store: PgSessionStore,
    session: SessionInfo,
    role: Role,
    inboxId: string | undefined,
    agentsRead: AgentsRead | null,
    entered: EnteredFirst | null = null,
    history: 'carried' | 'read' = 'read',
    cause: TurnCause = 'input',
  ): Promise<'stop' | 'next'> {
    const sessionId = session.id;
    const deps = this.loopDeps.deps(store, session.userId, role, d.ids.turnId, agentsRead, d.log, jobRunOf(session));
    const signal = AbortSignal.any([d.turn.signal, d.lost.signal]);
    const log = d.log.child({ epoch: d.lease.epoch });
    let outcome: TurnOutcome;
    if (session.turnState === 'running' && entered && session.turnId === entered.message.id) {
      // The submit's statement entered the input: the turn has started.
      this.starting(log, history);
      this.started(history);
      const input = { kind: 'entered' as const, messageId: entered.message.id, frameId: entered.frame.id };
      outcome = await runTurn(deps, { sessionId, input, signal });
    } else if (session.turnState === 'running' || session.turnState === 'parked') {
      const continued = await this.recovery.continueTurn(deps, d, session, role, signal, log);
      if (continued === 'stop' || continued === 'next') return continued;
      outcome = continued;
    } else {
      if (!inboxId) return 'stop';
      this.starting(log, history);
      try {
        outcome = await runTurn(deps, { sessionId, input: { kind: 'inbox', inboxId }, signal });
      } finally {
        // Started only if its first commit went through: a lease lost before it (or an input already
        // gone) started nothing here, and the next driver starts the same input.
        if (store.enteredTurn()) this.started(history);
      }
    }
    if (d.lost.signal.aborted) throw new LeaseLostError(`lease of session ${sessionId} lost`);
    log.info({ outcome: outcome.kind }, 'turn ended');
    // The next turn of this session (under this lease or the next one taken) starts from these rows.
    if (outcome.kind !== 'parked') this.carry.keep(sessionId, d.lease.epoch, store.history(), session.userId);
    this.metrics.turnsFinished.inc({ outcome: outcome.kind });
    // The turn's finishing commit said whether a stop is recorded: clear it only then (or when
    // that commit did not say) — after that commit no stop can be recorded for this turn.
    if (outcome.kind !== 'parked' && store.stopAtFinish() !== false) await this.turnState.clearStop(sessionId);
    // The scheduler's doorbell for job sessions (it reads the ending from the session's rows).
    if (outcome.kind !== 'parked') this.announce.turnEnded(session, { turnId: d.ids.turnId, cause }, outcome, log);
    if (outcome.kind === 'cancelled') await this.announce.cancelPending(session.userId, role, sessionId, log);
    return outcome.kind === 'parked' ? 'stop' : 'next';
  }

  /**
   * Runs `fn` holding the session's lease, for a command that writes the conversation (/compact,
   * /clear): no turn can start meanwhile, every write is fenced. Null when another driver holds
   * the lease. Input that arrived meanwhile is driven afterwards.
   */
  async withLease<T>(
    sessionId: string,
    fn: (store: PgSessionStore, signal: AbortSignal, role: Role) => Promise<T>,
  ): Promise<T | null> {
    const lease = await this.lease.acquireForCommand(sessionId);
    if (!lease) return null;
    const d = newDriving(lease, this.log);
    this.driving.set(sessionId, d);
    const heartbeat = this.lease.startHeartbeat(d);
    try {
      const store = this.loopDeps.store(lease, () => d.log);
      const { role } = await this.turnState.turnControl(sessionId);
      return await fn(store, AbortSignal.any([d.turn.signal, d.lost.signal]), role);
    } finally {
      clearInterval(heartbeat);
      this.driving.delete(sessionId);
      // A slot a dead driver reserved for a turn that never started (the command may have taken its input) goes back.
      await this.intake.letGo(lease).catch(() => false);
      await this.leases.release(lease).catch(() => undefined);
      // A doorbell that rang meanwhile (the command looks at no inbox) counts as work: the check
      // after the release may not see a message whose statement saw the lease held.
      if (!this.draining && (d.rangAt > 0 || (await this.intake.hasWork(sessionId))))
        setImmediate(() => void this.drive(sessionId));
    }
  }

  /** The loop's ports for one session's owner (see LoopDepsBuilder.deps): the /context and /compact commands. */
  deps(
    store: PgSessionStore,
    userId: string,
    role: Role,
    turnId?: string,
    agentsRead: AgentsRead | null = null,
    log?: Logger,
  ): LoopDeps {
    return this.loopDeps.deps(store, userId, role, turnId, agentsRead, log);
  }

  /**
   * SIGTERM: stop taking sessions; turns waiting for a human park at once; running turns get the
   * grace period to finish. Whatever still runs then is left to recovery on another replica (its
   * lease is released and the session woken), exactly as after a crash — never cancelled.
   */
  async drainAll(graceMs: number): Promise<void> {
    this.draining = true;
    const deadline = Date.now() + Math.max(0, graceMs - 2_000);
    while (this.driving.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const [sessionId, d] of this.driving) {
      this.log.warn({ sessionId }, 'turn still running at the end of the grace period; handing it to another replica');
      // Released first: from here on every write of this turn is fenced, so stopping it below
      // cannot record it as stopped by the user; the next driver recovers it.
      await this.leases.release(d.lease).catch(() => undefined);
      d.lost.abort();
      this.announce.ring(sessionId, 'handover');
    }
  }

  onApplicationShutdown(): void {
    this.draining = true;
  }
}
