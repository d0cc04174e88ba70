import type {
  ApprovalPreview,
  PreviewRefusal,
  ToolContext,
  ToolExecution,
  ToolInvocation,
  ToolProgress,
  ToolResult,
  ToolRunOptions,
  ToolSetPort,
  ToolSpec,
} from '@skald/agent-loop';
import {
  type Role,
  ABSENT_FILE_HASH,
  BUILTIN_TOOLS,
  BUILTIN_TOOLS_BY_NAME,
  McpToolDef,
  TOOL_ALIVE_LOSS_MS,
  topicOf,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { RUNNER_LOST, watchRunner } from './runner-watch';
import { toolLabel, type ToolLabel } from './tool-label';
import { TurnFacts } from './turn-facts';

/** The sentence of a call whose runner went silent mid-call (a crash, a kill, a partition). */
export function runnerLostMessage(lossMs: number): string {
  return `the tool runner stopped answering while running this call (no sign of life for ${lossMs / 1000} s); it may or may not have taken effect. Check the current state before retrying.`;
}

const EXEC_MARGIN_MS = 15_000;

interface Catalog {
  groups: string[];
  tools: McpToolDef[];
  unavailable_builtins: string[];
}

/** How long a worker trusts the runners' answer on the built-in tools they cannot run (their configuration). */
const UNAVAILABLE_TTL_MS = 60_000;
/** Per bus (one per worker): the built-in tools the runners said they cannot run, and when. */
const unavailableByBus = new WeakMap<Bus, { names: ReadonlySet<string>; at: number }>();

/** MCP calls are bounded by the tool runner (`SKALD_MCP_CALL_TIMEOUT_SECS`) and by `/stop`; this only ends a lost request. */
const MCP_REQUEST_MS = 3_600_000;

/**
 * Built-in and MCP tools executed by the tool runner over NATS (`tools.exec`, killed by
 * `tools.cancel.<id>`). One instance per turn: it remembers the MCP tools it offered, so that a
 * call knows whether its tool is read-only (safe to run beside others) or idempotent (safe to run
 * again after a crash).
 */
export class RunnerToolSet implements ToolSetPort {
  private readonly mcpTools = new Map<string, McpToolDef>();

  constructor(
    private readonly bus: Bus,
    private readonly role: Role,
    /** The turn whose calls these are (logged by the tool runner). */
    private readonly turnId?: string,
    /** The turn's remembered facts: the visible tools are asked once; a call that may write forgets them. */
    private readonly facts: TurnFacts = new TurnFacts(),
  ) {}

  /**
   * The built-in tools of the registry (with where each is offered) and the tools of the MCP
   * servers granted to this scope (`activate_tools`). What an unconditional Deny hides is the
   * loop's business (`GatePort.visibleTools`), for these and its own tools alike.
   */
  async definitions(ctx: ToolContext): Promise<ToolSpec[]> {
    // A round with no MCP grant asks the runner nothing but, once a minute per worker, what it
    // cannot run for want of configuration (web_search without a backend): that is not offered.
    const known = unavailableByBus.get(this.bus);
    const stale = !known || Date.now() - known.at >= UNAVAILABLE_TTL_MS;
    const catalog = ctx.grants.length > 0 || stale ? await this.askCatalog(ctx, ctx.grants) : null;
    if (catalog) unavailableByBus.set(this.bus, { names: new Set(catalog.unavailable_builtins), at: Date.now() });
    const mcp = ctx.grants.length > 0 ? (catalog?.tools ?? []) : [];
    for (const t of mcp) this.mcpTools.set(t.name, t);
    const unavailable = catalog ? new Set(catalog.unavailable_builtins) : (known?.names ?? new Set<string>());
    const offered = BUILTIN_TOOLS.filter(
      (t) => (t.offeredAt.root || t.offeredAt.subAgents) && !unavailable.has(t.name),
    );
    const builtins: ToolSpec[] = offered.map((t) => ({
      definition: {
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      },
      ...(t.offeredAt.subAgents ? {} : { rootAgentOnly: true }),
      ...(t.offeredAt.root ? {} : { subAgentsOnly: true }),
    }));
    return [
      ...builtins,
      ...mcp.map((t): ToolSpec => ({
        definition: {
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.parameters },
        },
      })),
    ];
  }

  /** The user's enabled MCP servers: what `activate_tools` may grant. */
  async groups(ctx: ToolContext): Promise<string[]> {
    return (await this.mcpCatalog(ctx, [])).groups;
  }

  /** The user's MCP groups and the tools of the granted ones; none while the runner is unreachable. */
  private async mcpCatalog(ctx: ToolContext, granted: string[]): Promise<Catalog> {
    return (await this.askCatalog(ctx, granted)) ?? { groups: [], tools: [], unavailable_builtins: [] };
  }

  /** The runner's catalog; null while it is unreachable. */
  private async askCatalog(ctx: ToolContext, granted: string[]): Promise<Catalog | null> {
    try {
      return await this.bus.call('mcp.catalog', {
        actor: { userId: ctx.userId, role: this.role },
        session_id: ctx.sessionId,
        granted: granted.slice(0, 64),
      });
    } catch {
      return null;
    }
  }

  label(name: string, args: unknown): ToolLabel {
    return toolLabel(name, args);
  }

  build(call: ToolInvocation, ctx: ToolContext): ToolExecution {
    const spec = BUILTIN_TOOLS_BY_NAME.get(call.name);
    const isMcp = call.name.startsWith('mcp__');
    const mcp = this.mcpTools.get(call.name);
    const bus = this.bus;
    const role = this.role;
    const turnId = this.turnId;
    const facts = this.facts;
    const readOnly = spec?.concurrencySafe ?? mcp?.read_only ?? false;
    const args =
      call.arguments && typeof call.arguments === 'object' && !Array.isArray(call.arguments)
        ? (call.arguments as Record<string, unknown>)
        : null;
    const timeoutSecs = typeof args?.timeout === 'number' ? args.timeout : 120;
    return {
      concurrencySafe: spec?.concurrencySafe ?? mcp?.read_only ?? false,
      // ARCHITECTURE.md: an MCP call is marked interrupted after a crash unless its tool is annotated
      // read-only or idempotent (unknown after a restart, before the first round: interrupted).
      restartHint: spec?.restartHint ?? (mcp && (mcp.read_only || mcp.idempotent) ? 'reExecute' : 'markInterrupted'),
      async run(
        signal: AbortSignal,
        _onProgress: (p: ToolProgress) => void,
        options?: ToolRunOptions,
      ): Promise<ToolResult> {
        if (!spec && !isMcp) return { ok: false, error: `unknown tool ${call.name}` };
        if (!args) return { ok: false, error: `invalid arguments for ${call.name}: expected a JSON object` };
        if (signal.aborted) return { ok: false, error: 'cancelled' };
        const watch = watchRunner(bus, call.toolCallId);
        try {
          const reply = await Promise.race([
            bus.call(
              'tools.exec',
              {
                actor: { userId: ctx.userId, role },
                session_id: ctx.sessionId,
                tool_call_id: call.toolCallId,
                turn_id: turnId,
                name: call.name,
                arguments: args,
                working_directory: ctx.runContext.workingDirectory,
                ...(options?.expectedBaseHash !== undefined ? { expected_base_hash: options.expectedBaseHash } : {}),
                ...(options?.judgedLanding !== undefined ? { judged_landing: [...options.judgedLanding] } : {}),
              },
              {
                timeoutMs: isMcp ? MCP_REQUEST_MS : Math.min(600, Math.max(1, timeoutSecs)) * 1000 + EXEC_MARGIN_MS,
                // A stop ends the wait for a runner that is restarting (the request is tried again meanwhile).
                signal,
              },
            ),
            watch.lost,
          ]);
          if (reply === RUNNER_LOST) {
            // Kill it, should the runner be alive but cut off; the call is never run again.
            bus.publish(topicOf('toolCancel', call.toolCallId), {
              tool_call_id: call.toolCallId,
            });
            return { ok: false, interrupted: true, error: runnerLostMessage(TOOL_ALIVE_LOSS_MS) };
          }
          switch (reply.status) {
            case 'done':
              return {
                ok: true,
                content: reply.result,
                resultType: reply.result_type,
                changedPaths: reply.file_changed ? [reply.file_changed] : undefined,
                openedPaths: reply.open_file ? [reply.open_file] : undefined,
              };
            case 'failed':
              return { ok: false, error: reply.error };
            case 'cancelled':
              return { ok: false, error: 'cancelled' };
            case 'stale':
              return { ok: false, error: reply.error, stale: true };
            default: {
              const never: never = reply;
              return { ok: false, error: `unexpected reply ${JSON.stringify(never)}` };
            }
          }
        } catch (e) {
          if (e instanceof RemoteError) return { ok: false, error: e.message };
          if (e instanceof BusRequestError) {
            // Nobody took the request, even when tried again for the bus's bound: nothing ran.
            // Otherwise it may have run: interrupted.
            if (e.code === 'no_responders')
              return { ok: false, error: `tool runner unavailable: ${e.message}; the call was not run` };
            return {
              ok: false,
              interrupted: true,
              error: `the tool runner did not answer (${e.message}); the call may or may not have taken effect. Check the current state before retrying.`,
            };
          }
          throw e;
        } finally {
          watch.close();
          if (!readOnly) facts.changed();
        }
      },
      /** The diff for the approval card, computed by the tool runner from the user's workspace. */
      async preview(): Promise<ApprovalPreview | PreviewRefusal | null> {
        if (!spec?.writesFile || !args) return null;
        try {
          const r = await bus.call('tools.preview', {
            actor: { userId: ctx.userId, role },
            session_id: ctx.sessionId,
            tool_call_id: call.toolCallId,
            turn_id: turnId,
            name: call.name,
            arguments: args,
            working_directory: ctx.runContext.workingDirectory,
          });
          if (r.refused !== undefined) return { refused: r.refused };
          return r.preview
            ? {
                path: r.preview.path,
                oldContent: r.preview.old_content,
                newContent: r.preview.new_content,
                // No `base_hash`: computed while the file did not exist.
                baseHash: r.preview.base_hash ?? ABSENT_FILE_HASH,
              }
            : null;
        } catch {
          // No preview is better than a wrong one: the card falls back to approval_required.
          return null;
        }
      },
      stop(): void {
        bus.publish(topicOf('toolCancel', call.toolCallId), {
          tool_call_id: call.toolCallId,
        });
      },
    };
  }
}
