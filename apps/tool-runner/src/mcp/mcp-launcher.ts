import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from '@skald/service-kit';
import { CommandRunner } from '../command/command-runner';
import { resolveExecutable } from '../command/bwrap-command.runner';
import { bwrapOptions, SANDBOX_PATH, SandboxLayout } from '../command/sandbox/bwrap-args';
import { detectLayout } from '../command/sandbox/sandbox-layout';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { ToolError } from '../tool-error';
import { WorkspacesService } from '../workspace/workspaces.service';

/** How a stdio MCP server is started: what `StdioClientTransport` spawns. */
export interface StdioLaunch {
  command: string;
  args: string[];
  /** The whole environment of the spawned process (the SDK adds only PATH/HOME/TERM/USER-like names). */
  env: Record<string, string>;
  cwd: string;
}

export interface StdioServerSpec {
  userId: string;
  command: string;
  args: string[];
  /** The server's configured variables (its credentials): the only ones it sees besides PATH, HOME, LANG. */
  env: Record<string, string>;
  network: boolean;
}

/**
 * Starts stdio MCP servers in a bubblewrap sandbox of their own: new user, pid, ipc, uts and cgroup
 * namespaces (and network unless the server's `network` is false), no capabilities, dies with the
 * runner, system directories read-only (so `command` resolves against what is installed
 * system-wide, plus the operator's `SKALD_SANDBOX_RO_BINDS`), a private `/tmp`, and the user's
 * workspace at `/workspace`. Its environment is PATH, HOME, LANG and exactly the variables
 * configured for that server: nothing of the runner's. The variables travel in the environment
 * of bwrap, never on a command line where `ps` would show them.
 *
 * With `SKALD_SANDBOX=none` (development only, stated loudly at start) the server runs unsandboxed
 * with the same environment. When the sandbox is configured but broken, stdio servers are refused.
 */
@Injectable()
export class McpLauncher implements OnApplicationShutdown {
  private prepared?: Promise<{ bwrap: string; layout: SandboxLayout; dispose(): Promise<void> }>;

  constructor(
    @Inject(TOOL_RUNNER_CONFIG) private readonly config: ToolRunnerConfig,
    private readonly commands: CommandRunner,
    private readonly workspaces: WorkspacesService,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  async stdio(spec: StdioServerSpec): Promise<StdioLaunch> {
    await this.workspaces.jail(spec.userId); // creates the workspace on first use
    const workspace = this.workspaces.hostDir(spec.userId);
    const env: Record<string, string> = {
      ...spec.env,
      PATH: SANDBOX_PATH,
      LANG: 'C.UTF-8',
    };
    if (this.config.SKALD_SANDBOX === 'none') {
      return { command: spec.command, args: spec.args, env: { ...env, HOME: workspace }, cwd: workspace };
    }
    const status = await this.commands.init();
    if (!status.available) throw new ToolError('unavailable', `MCP stdio servers need the sandbox: ${status.summary}`);
    const { bwrap, layout } = await this.prepare();
    return {
      command: bwrap,
      args: [
        ...mcpBwrapArgs(layout, workspace, spec.network, this.config.SKALD_SANDBOX_TMP_SIZE),
        '--',
        spec.command,
        ...spec.args,
      ],
      env,
      cwd: '/',
    };
  }

  async onApplicationShutdown(): Promise<void> {
    const p = await this.prepared?.catch(() => null);
    await p?.dispose();
  }

  private prepare() {
    this.prepared ??= (async () => {
      const bwrap = await resolveExecutable(this.config.SKALD_SANDBOX_BWRAP);
      // resolv.conf included: a server with network on resolves names.
      const detected = await detectLayout({ network: true, extraRo: this.config.SKALD_SANDBOX_RO_BINDS });
      this.log.info({ bwrap }, 'MCP stdio servers run under bubblewrap');
      return { bwrap, layout: detected.layout, dispose: () => detected.dispose() };
    })();
    return this.prepared;
  }
}

/** The bubblewrap options for one stdio MCP server (the command follows `--`). Pure. */
export function mcpBwrapArgs(
  layout: SandboxLayout,
  workspace: string,
  network: boolean,
  tmpSizeBytes: number,
): string[] {
  return bwrapOptions({ layout, workspace, cwd: '/workspace', network, tmpSizeBytes }, 'inherited');
}
