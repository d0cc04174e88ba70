import type {
  ApprovalPreview,
  ToolContext,
  ToolExecution,
  ToolInvocation,
  ToolProgress,
  ToolResult,
  ToolRunOptions,
  ToolSetPort,
  ToolSpec,
} from '@skald/agent-loop';
import { ABSENT_FILE_HASH, BUILTIN_TOOLS, BUILTIN_TOOLS_BY_NAME, TOPICS } from '@skald/contracts';
import { Bus, BusRequestError, RemoteError } from '@skald/messaging';

const EXEC_MARGIN_MS = 15_000;

/** Built-in tools executed by the tool runner over NATS (`tools.exec`, killed by `tools.cancel.<id>`). */
export class RunnerToolSet implements ToolSetPort {
  constructor(
    private readonly bus: Bus,
    private readonly role: 'user' | 'admin',
  ) {}

  /**
   * The built-in tools, less those an unconditional Deny hides from this agent (asked of the
   * approval service each round, which also records every offered name in the tool catalog).
   */
  async definitions(ctx: ToolContext): Promise<ToolSpec[]> {
    let visible: Set<string> | null = null;
    try {
      const r = await this.bus.call('approval.visible_tools', {
        actor: { userId: ctx.userId, role: this.role },
        session_id: ctx.sessionId,
        agent_id: ctx.agentId,
        source: ctx.source,
        tools: BUILTIN_TOOLS.map((t) => t.name),
      });
      visible = new Set(r.visible);
    } catch {
      // The gate still decides every call; hiding is a courtesy to the model.
      visible = null;
    }
    return BUILTIN_TOOLS.filter((t) => !visible || visible.has(t.name)).map((t) => ({
      definition: {
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      },
    }));
  }

  groups(): Promise<string[]> {
    return Promise.resolve([]);
  }

  label(name: string, args: unknown): { short: string; full: string; path?: string } {
    const a = args && typeof args === 'object' ? (args as Record<string, unknown>) : {};
    const path = typeof a.path === 'string' ? a.path : undefined;
    if (name === 'execute_cmd' && typeof a.command === 'string') {
      const cmd = a.command;
      return { short: `$ ${cmd.length > 60 ? `${cmd.slice(0, 57)}...` : cmd}`, full: `$ ${cmd}` };
    }
    return { short: path ? `${name} ${path}` : name, full: path ? `${name} ${path}` : name, ...(path ? { path } : {}) };
  }

  build(call: ToolInvocation, ctx: ToolContext): ToolExecution {
    const spec = BUILTIN_TOOLS_BY_NAME.get(call.name);
    const bus = this.bus;
    const role = this.role;
    const args =
      call.arguments && typeof call.arguments === 'object' && !Array.isArray(call.arguments)
        ? (call.arguments as Record<string, unknown>)
        : null;
    const timeoutSecs = typeof args?.timeout === 'number' ? args.timeout : 120;
    return {
      concurrencySafe: spec?.concurrencySafe ?? false,
      restartHint: spec?.restartHint ?? 'markInterrupted',
      async run(
        signal: AbortSignal,
        _onProgress: (p: ToolProgress) => void,
        options?: ToolRunOptions,
      ): Promise<ToolResult> {
        if (!spec) return { ok: false, error: `unknown tool ${call.name}` };
        if (!args) return { ok: false, error: `invalid arguments for ${call.name}: expected a JSON object` };
        if (signal.aborted) return { ok: false, error: 'cancelled' };
        try {
          const reply = await bus.call(
            'tools.exec',
            {
              actor: { userId: ctx.userId, role },
              session_id: ctx.sessionId,
              tool_call_id: call.toolCallId,
              name: call.name,
              arguments: args,
              ...(options?.expectedBaseHash !== undefined ? { expected_base_hash: options.expectedBaseHash } : {}),
            },
            { timeoutMs: Math.min(600, Math.max(1, timeoutSecs)) * 1000 + EXEC_MARGIN_MS },
          );
          switch (reply.status) {
            case 'done':
              return {
                ok: true,
                content: reply.result,
                resultType: reply.result_type,
                changedPaths: reply.file_changed ? [reply.file_changed] : undefined,
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
          if (e instanceof BusRequestError) return { ok: false, error: `tool runner unavailable: ${e.message}` };
          throw e;
        }
      },
      /** The diff for the approval card, computed by the tool runner from the user's workspace. */
      async preview(): Promise<ApprovalPreview | null> {
        if (!spec?.writesFile || !args) return null;
        try {
          const r = await bus.call('tools.preview', {
            actor: { userId: ctx.userId, role },
            session_id: ctx.sessionId,
            tool_call_id: call.toolCallId,
            name: call.name,
            arguments: args,
          });
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
        bus.publish(TOPICS.toolCancel.subject(call.toolCallId), TOPICS.toolCancel.message, {
          tool_call_id: call.toolCallId,
        });
      },
    };
  }
}
