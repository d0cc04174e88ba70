import { Inject, Injectable, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { BUILTIN_TOOLS, effectiveCallPathArgs, ParsedRequestOf, ReplyDataOf } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { loggerWithIds, requestLogIds } from '@skald/service-kit/log-ids';
import { LOGGER } from '../config';
import { StalePreview, ToolError } from '../tool-error';
import { callBase } from '../workspace/workspace-path';
import { CommandRunner } from '../command/command-runner';
import { CallConflict, CallResults } from './call-results';
import { InMemoryToolCallRecords, ToolCallRecords } from './tool-call-records';
import { Cancellations } from './cancellations';
import { ToolCancelled, ToolContext } from './tool-context';
import { ToolMetrics } from './tool-metrics';
import { ToolRouter } from './tool-router';

export type ToolExecRequest = ParsedRequestOf<'tools.exec'>;
export type ToolReply = ReplyDataOf<'tools.exec'>;

/** Bounds of the in-memory result store. */
export const RESULT_LIMITS = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024 };

export const RUNNER_INSTANCE = Symbol('RUNNER_INSTANCE');
export const DURABILITY_OPTIONS = Symbol('DURABILITY_OPTIONS');
export interface DurabilityOptions {
  /** How often a runner refreshes the heartbeat of the calls it runs. */
  heartbeatMs: number;
  /** A running call whose heartbeat is older than this was abandoned by a runner that died. */
  staleAfterMs: number;
  /** How often a duplicate polls the record of a call another runner is running. */
  pollMs: number;
  /** Finished records older than this many days are deleted (0: kept). */
  retentionDays: number;
}
export const DEFAULT_DURABILITY: DurabilityOptions = {
  heartbeatMs: 10_000,
  staleAfterMs: 30_000,
  pollMs: 250,
  retentionDays: 7,
};

/** The sentence the model reads for a call that started on a runner that died (ARCHITECTURE.md). */
export const INTERRUPTED_AFTER_START =
  'tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.';

/**
 * Runs a `tools.exec` once per tool call id: a duplicate gets the kept result (or waits for the
 * running call), a cancel aborts the running call. Every call ends with exactly one reply: done,
 * failed (the sentence the model reads) or cancelled.
 *
 * Durable: the start of a call is recorded in Postgres before it runs and its
 * reply when it ends, keyed by tool call id, with a heartbeat while it runs. A duplicate on any
 * replica, or after a restart of this one, gets the recorded reply; while another live runner runs
 * the call it waits for it; when the runner that started it died (heartbeat stale), a
 * `markInterrupted` tool (execute_cmd, append_file, insert_at_line, replace_lines, MCP tools)
 * answers `failed` with the "interrupted after it started" sentence and is never run again, while a
 * `reExecute` tool (reads, write_file, edit_file, memory_search) is taken over and run again.
 */
@Injectable()
export class ToolExecService implements OnModuleInit, OnApplicationShutdown {
  private readonly results = new CallResults<ToolReply>(RESULT_LIMITS, replySize);
  private readonly cancellations = new Cancellations();
  private readonly mine = new Set<string>();
  private readonly durability: DurabilityOptions;
  private timers: NodeJS.Timeout[] = [];

  private draining = false;

  constructor(
    private readonly router: ToolRouter,
    private readonly metrics: ToolMetrics,
    private readonly commands: CommandRunner,
    @Inject(LOGGER) private readonly log: Logger,
    @Optional() private readonly records: ToolCallRecords = new InMemoryToolCallRecords(),
    @Optional() @Inject(RUNNER_INSTANCE) private readonly instance: string = `tool-runner-${process.pid}`,
    @Optional() @Inject(DURABILITY_OPTIONS) durability?: Partial<DurabilityOptions>,
  ) {
    this.durability = { ...DEFAULT_DURABILITY, ...durability };
  }

  onModuleInit(): void {
    const beat = setInterval(() => {
      this.records.heartbeat(this.instance, [...this.mine]).catch((e: unknown) => {
        this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'tool call heartbeat failed');
      });
    }, this.durability.heartbeatMs);
    beat.unref();
    this.timers.push(beat);
    if (this.durability.retentionDays > 0) {
      const prune = (): void => {
        this.records.prune(this.durability.retentionDays).catch((e: unknown) => {
          this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'pruning old tool call records failed');
        });
      };
      const t = setInterval(prune, 3_600_000);
      t.unref();
      this.timers.push(t);
    }
  }

  onApplicationShutdown(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  async exec(req: ToolExecRequest): Promise<ToolReply> {
    const owner = `${req.actor.userId}:${req.name}`;
    // The call's logger: its lines name the user, session, turn and call of the request.
    const log = loggerWithIds(this.log, requestLogIds(req));
    const { value, replayed } = await this.results.run(
      req.tool_call_id,
      owner,
      () => {
        // Not started, so safe for the caller to retry on another replica.
        if (this.draining) throw new RunnerDraining();
        return this.runDurably(req, log);
      },
      // A stale preview wrote nothing: the call runs again after a fresh approval.
      (reply) => reply.status !== 'stale',
    );
    if (replayed) {
      this.metrics.replayed();
      log.info({ tool: req.name }, 'duplicate tool call answered with its result');
    }
    return value;
  }

  cancel(toolCallId: string): void {
    const running = this.cancellations.cancel(toolCallId);
    this.log.info({ toolCallId, running }, 'tool call cancel received');
  }

  get running(): number {
    return this.cancellations.runningCount;
  }

  /**
   * SIGTERM: take no new calls, let running ones finish until `deadlineMs`, then stop the commands
   * still running (they end failed, "stopped because the tool runner shut down") and wait for them.
   */
  async drain(deadlineMs: number): Promise<void> {
    this.draining = true;
    const until = Date.now() + deadlineMs;
    while (this.cancellations.runningCount > 0 && Date.now() < until) await sleep(50);
    if (this.cancellations.runningCount === 0) return;
    this.log.warn({ running: this.cancellations.runningCount }, 'stopping tool calls still running at shutdown');
    this.commands.stopAll();
    const hard = Date.now() + 2_000;
    while (this.cancellations.runningCount > 0 && Date.now() < hard) await sleep(20);
  }

  /** Records the start, runs, records the reply; or answers from the record of an earlier run. */
  private async runDurably(req: ToolExecRequest, log: Logger): Promise<ToolReply> {
    // A read has no effect to repeat: it re-runs after a crash (its restart hint), so no record is kept.
    if (READ_ONLY.has(req.name)) return this.runOnce(req, log);
    const call = {
      toolCallId: req.tool_call_id,
      userId: req.actor.userId,
      sessionId: req.session_id,
      toolName: req.name,
    };
    // The user, session, turn and call ids come with the call's logger (`exec`).
    const ids = { tool: call.toolName };
    for (;;) {
      const claim = await this.records.claim(call, this.instance, this.durability.staleAfterMs).catch((e: unknown) => {
        throw new RecordUnavailable(e);
      });
      if (claim.kind === 'claimed') break;
      if (claim.userId !== call.userId || claim.toolName !== call.toolName) throw new CallConflict(call.toolCallId);
      if (claim.kind === 'finished') {
        log.info(ids, 'tool call answered from its durable record');
        return claim.reply;
      }
      if (claim.kind === 'running') {
        await sleep(this.durability.pollMs);
        continue;
      }
      // Abandoned by a runner that died while running it.
      if (this.router.restartHint(call.toolName, call.userId) === 'markInterrupted') {
        const reply: ToolReply = { status: 'failed', error: INTERRUPTED_AFTER_START };
        if (await this.records.takeOver(call.toolCallId, claim.runner, this.instance)) {
          await this.records.finish(call.toolCallId, this.instance, reply);
          log.warn({ ...ids, deadRunner: claim.runner }, 'tool call abandoned by a dead runner: interrupted');
          return reply;
        }
        continue;
      }
      if (await this.records.takeOver(call.toolCallId, claim.runner, this.instance)) {
        log.warn({ ...ids, deadRunner: claim.runner }, 'tool call abandoned by a dead runner: running it again');
        break;
      }
    }
    this.mine.add(call.toolCallId);
    try {
      const reply = await this.runOnce(req, log);
      if (reply.status === 'stale') {
        // Nothing happened: the call runs again once the human approves a fresh preview.
        await this.records.release(call.toolCallId, this.instance).catch((e: unknown) => {
          log.error(
            { ...ids, err: e instanceof Error ? e.message : String(e) },
            'could not release the record of a stale tool call',
          );
        });
        return reply;
      }
      await this.records.finish(call.toolCallId, this.instance, reply).catch((e: unknown) => {
        log.error(
          { ...ids, err: e instanceof Error ? e.message : String(e) },
          'could not record the result of a tool call',
        );
      });
      return reply;
    } finally {
      this.mine.delete(call.toolCallId);
    }
  }

  private async runOnce(req: ToolExecRequest, log: Logger): Promise<ToolReply> {
    const started = performance.now();
    const signal = this.cancellations.begin(req.tool_call_id);
    let reply: ToolReply;
    try {
      const ctx: ToolContext = {
        userId: req.actor.userId,
        role: req.actor.role,
        sessionId: req.session_id,
        toolCallId: req.tool_call_id,
        workdir: sessionWorkdir(req.arguments.workdir, req.working_directory),
        signal,
        ...(req.expected_base_hash !== undefined ? { expectedBaseHash: req.expected_base_hash } : {}),
        ...(req.judged_landing !== undefined ? { judgedLanding: landingByArgument(req) } : {}),
        log,
      };
      if (signal.aborted) throw new ToolCancelled();
      const out = await this.router.route(req.name, ctx, req.arguments);
      reply = {
        status: 'done',
        result: out.result,
        result_type: out.resultType ?? 'text',
        ...(out.fileChanged ? { file_changed: out.fileChanged } : {}),
        ...(out.fileOpened ? { open_file: out.fileOpened } : {}),
      };
    } catch (e) {
      if (e instanceof ToolCancelled) reply = { status: 'cancelled' };
      else if (e instanceof StalePreview) reply = { status: 'stale', error: e.message };
      else if (e instanceof ToolError) reply = { status: 'failed', error: e.message };
      else {
        log.error({ tool: req.name, err: e instanceof Error ? e.message : String(e) }, 'tool call failed unexpectedly');
        reply = { status: 'failed', error: `${req.name} failed with an internal error` };
      }
    } finally {
      this.cancellations.end(req.tool_call_id);
    }
    const ms = performance.now() - started;
    this.metrics.finished(req.name, reply.status, ms / 1000);
    // A read that succeeded is the routine call (most of a tool loop's calls): at debug, since a line
    // is a write through the thread pool; its count and time are in the metrics.
    const routine = reply.status === 'done' && READ_ONLY.has(req.name);
    log[routine ? 'debug' : 'info']({ tool: req.name, status: reply.status, ms: Math.round(ms) }, 'tool call finished');
    return reply;
  }
}

/**
 * The call's base directory: its `workdir` argument (absolute, or relative to the session's
 * working directory), else the session's working directory, else /workspace — the shared resolver,
 * the one the approval gate judges with.
 */
export function sessionWorkdir(workdir: unknown, sessionWorkingDirectory?: string | null): string {
  return callBase(workdir, sessionWorkingDirectory);
}

function replySize(reply: ToolReply): number {
  switch (reply.status) {
    case 'done':
      return reply.result.length * 2 + 256;
    case 'failed':
      return reply.error.length * 2 + 128;
    case 'cancelled':
      return 64;
    case 'stale':
      return reply.error.length * 2 + 128;
  }
}

/** Tools without side effects: never recorded, a duplicate simply reads again. */
const READ_ONLY: ReadonlySet<string> = new Set(BUILTIN_TOOLS.filter((t) => t.access === 'read').map((t) => t.name));

/** The start of a call could not be recorded: it did not run; the caller retries. */
export class RecordUnavailable extends Error {
  readonly code = 'unavailable';
  constructor(cause: unknown) {
    super(`the tool runner cannot record the call (${cause instanceof Error ? cause.message : String(cause)}); retry`);
    this.name = 'RecordUnavailable';
  }
}

/** Answered to `tools.exec` while shutting down: the call did not start. */
export class RunnerDraining extends Error {
  readonly code = 'unavailable';
  constructor() {
    super('this tool runner is shutting down; retry the call');
    this.name = 'RunnerDraining';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** `judged_landing` keyed by the path argument each entry is for (the shared resolver's order). */
function landingByArgument(req: ToolExecRequest): Record<string, string | null> {
  const landing = req.judged_landing ?? [];
  return Object.fromEntries(effectiveCallPathArgs(req.name, req.arguments).map((arg, i) => [arg, landing[i] ?? null]));
}
