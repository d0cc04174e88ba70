import { Inject, Injectable } from '@nestjs/common';
import { ParsedRequestOf, ReplyDataOf } from '@skald/contracts';
import { Logger } from '@skald/service-kit';
import { LOGGER } from '../config';
import { ToolError } from '../tool-error';
import { resolveWorkspacePath, WORKSPACE } from '../workspace/workspace-path';
import { CommandRunner } from '../command/command-runner';
import { CallResults } from './call-results';
import { Cancellations } from './cancellations';
import { ToolCancelled, ToolContext } from './tool-context';
import { ToolMetrics } from './tool-metrics';
import { ToolRouter } from './tool-router';

export type ToolExecRequest = ParsedRequestOf<'tools.exec'>;
export type ToolReply = ReplyDataOf<'tools.exec'>;

/** Bounds of the in-memory result store. */
export const RESULT_LIMITS = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024 };

/**
 * Runs a `tools.exec` once per tool call id: a duplicate gets the kept result (or waits for the
 * running call), a cancel aborts the running call. Every call ends with exactly one reply: done,
 * failed (the sentence the model reads) or cancelled.
 */
@Injectable()
export class ToolExecService {
  private readonly results = new CallResults<ToolReply>(RESULT_LIMITS, replySize);
  private readonly cancellations = new Cancellations();

  private draining = false;

  constructor(
    private readonly router: ToolRouter,
    private readonly metrics: ToolMetrics,
    private readonly commands: CommandRunner,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  async exec(req: ToolExecRequest): Promise<ToolReply> {
    const owner = `${req.actor.userId}:${req.name}`;
    const { value, replayed } = await this.results.run(req.tool_call_id, owner, () => {
      // Not started, so safe for the caller to retry on another replica.
      if (this.draining) throw new RunnerDraining();
      return this.runOnce(req);
    });
    if (replayed) {
      this.metrics.replayed();
      this.log.info(
        { userId: req.actor.userId, sessionId: req.session_id, toolCallId: req.tool_call_id, tool: req.name },
        'duplicate tool call answered with its result',
      );
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

  private async runOnce(req: ToolExecRequest): Promise<ToolReply> {
    const started = performance.now();
    const signal = this.cancellations.begin(req.tool_call_id);
    let reply: ToolReply;
    try {
      const ctx: ToolContext = {
        userId: req.actor.userId,
        sessionId: req.session_id,
        toolCallId: req.tool_call_id,
        workdir: sessionWorkdir(req.arguments.workdir),
        signal,
      };
      if (signal.aborted) throw new ToolCancelled();
      const out = await this.router.route(req.name, ctx, req.arguments);
      reply = {
        status: 'done',
        result: out.result,
        result_type: 'text',
        ...(out.fileChanged ? { file_changed: out.fileChanged } : {}),
      };
    } catch (e) {
      if (e instanceof ToolCancelled) reply = { status: 'cancelled' };
      else if (e instanceof ToolError) reply = { status: 'failed', error: e.message };
      else {
        this.log.error(
          { toolCallId: req.tool_call_id, tool: req.name, err: e instanceof Error ? e.message : String(e) },
          'tool call failed unexpectedly',
        );
        reply = { status: 'failed', error: `${req.name} failed with an internal error` };
      }
    } finally {
      this.cancellations.end(req.tool_call_id);
    }
    const ms = performance.now() - started;
    this.metrics.finished(req.name, reply.status, ms / 1000);
    this.log.info(
      {
        userId: req.actor.userId,
        sessionId: req.session_id,
        toolCallId: req.tool_call_id,
        tool: req.name,
        status: reply.status,
        ms: Math.round(ms),
      },
      'tool call finished',
    );
    return reply;
  }
}

/** The session's working directory from the `workdir` argument; relative values resolve against /workspace. */
function sessionWorkdir(workdir: unknown): string {
  if (workdir === undefined || workdir === null || workdir === '') return WORKSPACE;
  if (typeof workdir !== 'string') throw new ToolError('invalid_argument', 'workdir must be a string');
  return resolveWorkspacePath(workdir, WORKSPACE, 'workdir').virtual;
}

function replySize(reply: ToolReply): number {
  switch (reply.status) {
    case 'done':
      return reply.result.length * 2 + 256;
    case 'failed':
      return reply.error.length * 2 + 128;
    case 'cancelled':
      return 64;
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
