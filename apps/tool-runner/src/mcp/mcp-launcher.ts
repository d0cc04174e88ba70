import { Inject, Injectable } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { everyFieldApplied, type McpConfigFields, refusedEnvName } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { BwrapCommandRunner } from '../command/bwrap-command.runner';
import { CommandRunner } from '../command/command-runner';
import { execScript, SANDBOX_PATH } from '../command/sandbox/bwrap-args';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { ToolError } from '../tool-error';
import { describeUsage, full, over, WorkspacesService } from '../workspace/workspaces.service';
import { BoundedStdioTransport, StdioProcess } from './bounded-stdio-transport';

/**
 * A stdio server's configuration and its user: the command, its arguments, its variables (its
 * credentials, exported inside the sandbox only) and whether it asks for the network (it gets it
 * only when the operator allows it too).
 */
export type StdioServerSpec = { userId: string } & McpConfigFields<'stdio'>;

/**
 * Starts stdio MCP servers confined exactly like `execute_cmd`: the command runner's sandbox (same
 * options, uid, filesystem view, syscall filter, cgroup limits and rlimits; CPU seconds bounded by
 * the connection's lifetime), the network only when the server's configuration asks for it and
 * `SKALD_MCP_NETWORK=on`. The server's command, arguments and variables are its launch script, read
 * inside the sandbox: no host process has any of them in its argv, environment or working directory.
 * Its HOME and working directory are a fresh tmpfs of its own (`MCP_HOME`), not `/workspace`: the
 * model's commands write the workspace, and a dotfile there (`.npmrc`, `.bashrc`, `.profile`,
 * `.config/…`, a module beside a `python -m`) would run with the server's credentials. Nothing in it
 * outlives the server (its configuration and credentials come from its registration, every start).
 * At most `SKALD_MCP_MAX_RUNNING` servers run on this runner and `SKALD_MCP_MAX_RUNNING_PER_USER`
 * per user. Every message a server sends is bounded (`SKALD_MCP_MAX_MESSAGE_BYTES`) while read.
 *
 * The workspace quota holds as for a command: a server does not start in a workspace at either
 * quota, one file grows no further than the bytes left when it started (RLIMIT_FSIZE), and the
 * workspace is sampled while it runs (`WorkspacesService.watch`): once usage passes either quota the
 * server is killed with its whole sandbox and its calls fail saying so.
 *
 * With `SKALD_SANDBOX=none` (development only, stated loudly at start) the server runs unsandboxed,
 * its launch script on a pipe. When the sandbox is configured but broken, stdio servers are refused.
 */
@Injectable()
export class McpLauncher {
  private readonly running = new Map<string, number>();
  private total = 0;

  constructor(
    @Inject(TOOL_RUNNER_CONFIG) private readonly config: ToolRunnerConfig,
    private readonly commands: CommandRunner,
    private readonly workspaces: WorkspacesService,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  async stdio(spec: StdioServerSpec): Promise<BoundedStdioTransport> {
    // Re-checked here: a configuration stored before the rule, or written around the gateway.
    for (const name of Object.keys(spec.env)) {
      const why = refusedEnvName(name);
      if (why) throw new ToolError('forbidden', `this MCP server's configuration cannot be started: ${why}`);
    }
    const perUser = this.running.get(spec.userId) ?? 0;
    if (perUser >= this.config.SKALD_MCP_MAX_RUNNING_PER_USER)
      throw new ToolError(
        'unavailable',
        `at most ${this.config.SKALD_MCP_MAX_RUNNING_PER_USER} of your stdio MCP servers run at once on this tool runner`,
      );
    if (this.total >= this.config.SKALD_MCP_MAX_RUNNING)
      throw new ToolError('unavailable', 'this tool runner runs as many stdio MCP servers as it may; retry later');
    // The slot is taken before the first await: concurrent starts count against each other.
    this.running.set(spec.userId, perUser + 1);
    this.total++;
    let release = (): void => {
      release = () => undefined;
      this.total--;
      const n = (this.running.get(spec.userId) ?? 1) - 1;
      if (n > 0) this.running.set(spec.userId, n);
      else this.running.delete(spec.userId);
    };
    try {
      const proc = await this.spawn(spec);
      const transport = new BoundedStdioTransport(proc, this.config.SKALD_MCP_MAX_MESSAGE_BYTES);
      const limits = this.workspaces.limits;
      const unwatch = this.workspaces.watch(spec.userId, (u) => {
        if (transport.failure !== null || !over(u, limits)) return;
        transport.failure = `workspace quota exceeded: ${describeUsage(u, limits)}; the MCP server was stopped. Delete files to make room.`;
        this.log.warn({ userId: spec.userId }, 'stdio MCP server stopped at the workspace quota');
        void transport.close();
      });
      void proc.exited.then(() => {
        unwatch();
        // What the server wrote is measured again, off any reply path.
        this.workspaces.remeasureSoon(spec.userId);
        release();
      });
      return transport;
    } catch (e) {
      release();
      throw e;
    }
  }

  private async spawn(spec: StdioServerSpec): Promise<StdioProcess> {
    const { userId, command, args, env, network, ...rest } = spec;
    everyFieldApplied(rest);
    const jail = await this.workspaces.jail(userId); // creates the workspace on first use
    const workspace = this.workspaces.hostDir(userId);
    const limits = this.workspaces.limits;
    const before = await this.workspaces.used(userId, jail);
    if (full(before, limits))
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: ${describeUsage(before, limits)}; the MCP server was not started. Delete files to make room.`,
      );
    const script = execScript(env, [command, ...args]);
    if (this.config.SKALD_SANDBOX === 'none') {
      // No sandbox (stated loudly at start): still a HOME of the server's own, never the workspace's
      // dotfiles; removed when it exits.
      const home = await mkdtemp(join(tmpdir(), 'skald-mcp-home-'));
      const child = spawn('/bin/sh', ['-c', '. /dev/fd/3'], {
        cwd: home,
        env: { PATH: SANDBOX_PATH, LANG: 'C.UTF-8', HOME: home },
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      });
      (child.stdio[3] as Writable).on('error', () => undefined).end(script);
      const exited = new Promise((r) => child.once('close', r)).finally(() =>
        rm(home, { recursive: true, force: true }).catch(() => undefined),
      );
      return { child, exited, kill: () => child.kill('SIGKILL') };
    }
    if (!(this.commands instanceof BwrapCommandRunner))
      throw new ToolError('unavailable', 'MCP stdio servers need the bubblewrap sandbox');
    const status = await this.commands.init();
    if (!status.available) throw new ToolError('unavailable', `MCP stdio servers need the sandbox: ${status.summary}`);
    return this.commands.spawnServer({
      workspace,
      network: network && this.config.SKALD_MCP_NETWORK === 'on',
      script,
      cpuSeconds: this.config.SKALD_MCP_LIFETIME_SECS,
      maxFileBytes: Math.max(0, limits.bytes - before.bytes),
    });
  }

  /** Servers running on this runner (for `/readyz` and tests). */
  get runningCount(): number {
    return this.total;
  }
}
