import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { realpath } from 'node:fs/promises';
import type { Logger } from '@skald/service-kit';
import { Readiness } from '@skald/service-kit/ops';
import { z } from 'zod';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { ToolCancelled, ToolContext, ToolOutput } from '../exec/tool-context';
import { ExecuteCmdArgs } from '../files/file-tool-args';
import { ToolError } from '../tool-error';
import { ioError } from '../workspace/jail';
import { resolveWorkdir } from '../workspace/workspace-path';
import { Usage } from '../workspace/disk-usage';
import { describeUsage, formatBytes, full, over, WorkspacesService } from '../workspace/workspaces.service';
import { CommandOutcome, CommandRunner, SandboxStatus } from './command-runner';
import { ProgressCoalescer, ProgressSink } from './tool-progress';

export const SANDBOX_UNAVAILABLE = 'execute_cmd is unavailable on this tool runner: no working command sandbox';

/**
 * `execute_cmd`: runs `sh -c <command>` through the configured `CommandRunner` in the session's
 * working directory, with live `tool_progress`. Fails closed: when the sandbox failed its start-up
 * self-test, commands are refused with the reason; `SKALD_SANDBOX=none` (no sandbox at all) is
 * stated loudly at start and on `/readyz`.
 *
 * The workspace quota (bytes and inodes) holds while the command runs: a workspace at or over either
 * quota runs no command; one file can grow no further than the bytes left (RLIMIT_FSIZE), and the
 * workspace is sampled while the command runs (`WorkspacesService.watch`): once it passes either
 * quota the command's whole sandbox is killed (the cancel path) and the call ends `quota_exceeded`.
 */
@Injectable()
export class ExecuteCmdService implements OnModuleInit {
  private status?: SandboxStatus;

  constructor(
    @Inject(TOOL_RUNNER_CONFIG) private readonly config: Pick<ToolRunnerConfig, 'SKALD_SANDBOX'>,
    private readonly workspaces: WorkspacesService,
    private readonly runner: CommandRunner,
    @Inject(LOGGER) private readonly log: Logger,
    @Optional() private readonly readiness?: Readiness,
    @Optional() private readonly progress?: ProgressSink,
  ) {}

  async onModuleInit(): Promise<void> {
    const status = await this.sandbox();
    if (status.kind === 'none') {
      this.log.warn({ sandbox: 'none' }, `!!! ${status.summary} !!!`);
      this.readiness?.note('sandbox', status.summary);
    } else if (status.available) {
      this.log.info({ sandbox: 'bwrap' }, status.summary);
      this.readiness?.note('sandbox', status.summary);
    } else {
      const text = `${SANDBOX_UNAVAILABLE} (${status.summary}); commands are REFUSED until it is fixed`;
      this.log.error({ sandbox: 'bwrap' }, `!!! ${text} !!!`);
      this.readiness?.note('sandbox', text);
    }
  }

  private async sandbox(): Promise<SandboxStatus> {
    this.status ??= await this.runner.init();
    return this.status;
  }

  async execute(ctx: ToolContext, args: z.output<typeof ExecuteCmdArgs>): Promise<ToolOutput> {
    const status = await this.sandbox();
    if (!status.available) throw new ToolError('unavailable', `${SANDBOX_UNAVAILABLE}: ${status.summary}`);
    if (status.kind === 'none' && this.config.SKALD_SANDBOX !== 'none')
      throw new ToolError('unavailable', SANDBOX_UNAVAILABLE);
    // The `workdir` argument is the session's working directory (resolved into ctx.workdir).
    const where = resolveWorkdir(ctx.workdir);
    const jail = await this.workspaces.jail(ctx.userId);
    const dir = await jail.openDir(where).catch((e: unknown) => {
      throw ioError(e, where);
    });
    let cwd: string;
    try {
      cwd = await realpath(`/proc/self/fd/${dir.fd}`);
    } finally {
      await dir.close();
    }
    // The real directory (a symlink inside the workspace may have led there), as the sandbox sees it.
    const virtualCwd = cwd === jail.root ? '/workspace' : `/workspace${cwd.slice(jail.root.length)}`;
    const limits = this.workspaces.limits;
    const before = await this.workspaces.used(ctx.userId, jail);
    if (full(before, limits))
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: ${describeUsage(before, limits)}; the command was not run. ` +
          'Delete files to make room.',
      );
    const room = Math.max(0, limits.bytes - before.bytes);
    // The cancel path kills the sandbox when either the caller cancels or the workspace passes its quota.
    const stop = new AbortController();
    let exceeded: Usage | null = null;
    const unwatch = this.workspaces.watch(ctx.userId, (u) => {
      if (exceeded === null && over(u, limits)) {
        exceeded = u;
        stop.abort();
      }
    });
    const signal = AbortSignal.any([ctx.signal, stop.signal]);
    const coalescer = new ProgressCoalescer((stream, chunk) =>
      this.progress?.publish(ctx.userId, {
        type: 'tool_progress',
        session_id: ctx.sessionId,
        tool_call_id: ctx.toolCallId,
        stream,
        chunk,
      }),
    );
    let outcome;
    try {
      outcome = await this.runner.run({
        command: args.command,
        cwd,
        virtualCwd,
        home: jail.root,
        timeoutSec: args.timeout,
        signal,
        maxFileBytes: room,
        onOutput: (stream, chunk) => coalescer.push(stream, chunk),
      });
    } finally {
      unwatch();
      coalescer.close();
    }
    // A command changes the workspace behind the file tools' back: measure it again, off the reply path.
    this.workspaces.remeasureSoon(ctx.userId);
    const hit: Usage | null = exceeded;
    if (hit !== null && !ctx.signal.aborted && outcome.kind === 'cancelled')
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: ${describeUsage(hit, limits)}; the command was killed. Delete files to make room.` +
          (outcome.output ? `\n${outcome.output}` : ''),
      );
    const quota = fileSizeHit(outcome) ? this.quotaNote(room) : '';
    switch (outcome.kind) {
      case 'exited': {
        const status = outcome.signal
          ? `[killed by signal ${outcome.signal}]`
          : `[exit code: ${outcome.exitCode ?? 'unknown'}]`;
        const text = `${outcome.output === '' ? '(no output)\n' : withNewline(outcome.output)}${status}`;
        // A write stopped at the quota (RLIMIT_FSIZE) leaves the workspace full: the call failed.
        if (quota !== '')
          throw new ToolError(
            'quota_exceeded',
            `workspace quota exceeded: a file write of the command was stopped at the ${formatBytes(room)} left of the ` +
              `${formatBytes(this.workspaces.quota)} quota. Delete files to make room.\n${text}`,
          );
        return { result: text };
      }
      case 'timed_out':
        throw new ToolError(
          'timed_out',
          `timed out after ${args.timeout} s${outcome.output ? `\n${outcome.output}` : ''}${quota}`,
        );
      case 'cancelled':
        throw new ToolCancelled();
      case 'stopped':
        throw new ToolError(
          'stopped',
          `the command was stopped because the tool runner shut down${outcome.output ? `\n${outcome.output}` : ''}`,
        );
    }
  }

  /** Said when a write of the command hit RLIMIT_FSIZE (the quota left when it started). */
  private quotaNote(room: number): string {
    return (
      `\n[a file write hit the workspace quota: ${formatBytes(room)} of the ${formatBytes(this.workspaces.quota)} quota ` +
      'were left when the command started; delete files to make room]'
    );
  }
}

/** SIGXFSZ: the shell reports 128+25, or the process died of the signal. */
function fileSizeHit(outcome: CommandOutcome): boolean {
  if (outcome.kind === 'exited')
    return (
      outcome.signal === 'SIGXFSZ' || outcome.exitCode === 153 || outcome.output.includes('File size limit exceeded')
    );
  return outcome.output.includes('File size limit exceeded');
}

function withNewline(s: string): string {
  return s.endsWith('\n') ? s : `${s}\n`;
}
