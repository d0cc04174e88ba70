import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { realpath } from 'node:fs/promises';
import { Logger, Readiness } from '@skald/service-kit';
import { z } from 'zod';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { ToolCancelled, ToolContext, ToolOutput } from '../exec/tool-context';
import { ExecuteCmdArgs } from '../files/file-tool-args';
import { ToolError } from '../tool-error';
import { ioError } from '../workspace/jail';
import { resolveWorkdir } from '../workspace/workspace-path';
import { WorkspacesService } from '../workspace/workspaces.service';
import { CommandRunner } from './command-runner';

export const SANDBOX_UNAVAILABLE = 'execute_cmd is not available on this tool runner yet';

/**
 * `execute_cmd`. Until issue 6 lands the bubblewrap sandbox, commands are refused (fail closed)
 * unless the operator set `SKALD_SANDBOX=none`, in which case they run unsandboxed through
 * `PlainCommandRunner` — stated loudly at start and on `/readyz`.
 */
@Injectable()
export class ExecuteCmdService implements OnModuleInit {
  constructor(
    @Inject(TOOL_RUNNER_CONFIG) private readonly config: Pick<ToolRunnerConfig, 'SKALD_SANDBOX'>,
    private readonly workspaces: WorkspacesService,
    private readonly runner: CommandRunner,
    @Inject(LOGGER) private readonly log: Logger,
    @Optional() private readonly readiness?: Readiness,
  ) {}

  onModuleInit(): void {
    if (this.config.SKALD_SANDBOX === 'none') {
      const text = 'SKALD_SANDBOX=none: execute_cmd runs commands WITHOUT ANY SANDBOX on this host (development only)';
      this.log.warn({ sandbox: 'none' }, `!!! ${text} !!!`);
      this.readiness?.note('sandbox', text);
    } else {
      this.readiness?.note(
        'sandbox',
        `${SANDBOX_UNAVAILABLE}: the bubblewrap sandbox is not implemented; commands are refused`,
      );
    }
  }

  async execute(ctx: ToolContext, args: z.output<typeof ExecuteCmdArgs>): Promise<ToolOutput> {
    if (this.config.SKALD_SANDBOX !== 'none') throw new ToolError('unavailable', SANDBOX_UNAVAILABLE);
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
    const outcome = await this.runner.run({
      command: args.command,
      cwd,
      home: jail.root,
      timeoutSec: args.timeout,
      signal: ctx.signal,
    });
    switch (outcome.kind) {
      case 'exited': {
        const status = outcome.signal
          ? `[killed by signal ${outcome.signal}]`
          : `[exit code: ${outcome.exitCode ?? 'unknown'}]`;
        return { result: `${outcome.output === '' ? '(no output)\n' : withNewline(outcome.output)}${status}` };
      }
      case 'timed_out':
        throw new ToolError(
          'timed_out',
          `timed out after ${args.timeout} s${outcome.output ? `\n${outcome.output}` : ''}`,
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
}

function withNewline(s: string): string {
  return s.endsWith('\n') ? s : `${s}\n`;
}
