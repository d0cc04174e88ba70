/** Reads what the projection needs for one frame and the tools it offers this round. */
import {
  ACTIVATE_TOOLS,
  ASK_USER_CLARIFICATION,
  EXECUTE_SUBTASK,
  EXECUTE_TASK,
  isLoopTool,
  LIST_AGENTS,
  UPDATE_SCRATCHPAD,
  WRITE_TODOS,
} from './loop-tools';
import { dynamicTail, flattenContext, projectContext, type ContextParts } from './projection';
import type { LoopDeps } from './ports';
import { isRoot, toolContext, type FrameContext, type TurnContext } from './turn-context';
import type { CompactionSummary, FrameRow, MessageRow, WireMessage, WireTool } from './types';

/** The frame's request messages for a round that offers `offered` (the memory context needs its read tool). */
export async function buildFrameMessages(
  fctx: FrameContext,
  cacheControl: boolean,
  offered: ReadonlySet<string>,
): Promise<WireMessage[]> {
  return flattenContext(await buildFrameContext(fctx, { cacheControl, memoryFor: offered }));
}

/**
 * The frame's context in the spec's order. `memoryFor`: the names the round offers — the root
 * frame's memory context is asked for only when they include the memory's read tool
 * (`MemoryPort.readTool`); null skips the memory query (a size estimate before compaction does
 * not need it).
 */
export async function buildFrameContext(
  fctx: FrameContext,
  options: { cacheControl: boolean; memoryFor: ReadonlySet<string> | null },
): Promise<ContextParts> {
  const { deps, session } = fctx.turn;
  const { store, config } = deps;
  const { compaction, messages } = await frameHistory(deps, fctx.frame.id);
  const root = isRoot(fctx);
  let memoryContext: string | null = null;
  const memory = deps.memory;
  if (
    root &&
    memory &&
    options.memoryFor &&
    (memory.readTool === undefined || options.memoryFor.has(memory.readTool))
  ) {
    memoryContext = await memory.queryContext(session.id, memoryQuery(messages));
  }
  const preGranted = session.runContext.enabledMcpServers ?? [];
  return projectContext({
    systemPrompt: fctx.agent.prompt,
    // Servers the RunContext enables are the whole choice (`activate_tools` is not offered): the
    // MCP list names them as enabled rather than how to activate the rest.
    substitutions:
      preGranted.length > 0
        ? { ...fctx.agent.substitutions, MCP_SERVERS: renderPreGrantedMcpList(preGranted) }
        : fctx.agent.substitutions,
    cacheControl: options.cacheControl,
    scratchpad: await store.getScratchpad(session.scratchpadSessionId),
    compactionSummary: compaction?.summary ?? null,
    messages,
    toolCalls: await store.listToolCalls(fctx.frame.id),
    maxHistoryMessages: config.compaction ? null : config.maxHistoryMessages,
    maxToolResultChars: config.maxToolResultChars,
    contextBudgetTokens: config.contextBudgetTokens,
    ...(deps.images ? { resultImage: (call) => deps.images?.resultImage(call) ?? null } : {}),
    dynamicTail: dynamicTail({
      memoryContext,
      extraPrompts: root ? session.runContext.systemPrompt : [],
      now: deps.clock.now(),
      timeZone: deps.clock.timeZone(),
      os: config.os,
      workingDirectory: session.runContext.workingDirectory ?? config.defaultWorkingDirectory,
    }),
    tailReminder: fctx.agent.tailReminder,
  });
}

/** A frame's compaction and the messages after its boundary (what its context is built from). */
async function frameHistory(
  deps: LoopDeps,
  frameId: string,
): Promise<{ compaction: CompactionSummary | null; messages: MessageRow[] }> {
  const compaction = deps.config.compaction ? await deps.store.getCompaction(frameId) : null;
  const messages = await deps.store.listMessages(frameId, { afterMessageId: compaction?.boundaryMessageId ?? null });
  return { compaction, messages };
}

/** What the root frame's memory context is asked with: its last message not from the assistant. */
function memoryQuery(messages: readonly MessageRow[]): string {
  return [...messages].reverse().find((m) => m.role !== 'assistant')?.content ?? '';
}

/**
 * Before the root frame's agent loads: tells the memory port the text the frame's memory context
 * will be asked with (`MemoryPort.expectQuery`), so that the agent's memory documents and the
 * context can come in one request. Nothing for a sub-agent's frame.
 */
export async function expectMemoryQuery(turn: TurnContext, frame: FrameRow): Promise<void> {
  const { deps, session } = turn;
  if (!deps.memory?.expectQuery || frame.parentToolCallId !== null) return;
  deps.memory.expectQuery(session.id, memoryQuery((await frameHistory(deps, frame.id)).messages));
}

/**
 * The tools offered this round: the tool set's (minus `root_agent_only` in sub-agents and
 * `sub_agents_only` at the root, minus names the loop owns) + the loop's own, each added once per
 * level, so names are unique by construction; then the agent's filters; then what an
 * unconditional Deny hides (the loop's own tools too). A call to any other name is refused
 * (`offerRefusal`), never dispatched.
 */
/** The MCP list of a session whose RunContext enables `names` from the start. */
export function renderPreGrantedMcpList(names: readonly string[]): string {
  return names.map((n) => `- \`${n}\` (enabled for this session: its tools are offered)`).join('\n');
}

export async function roundTools(fctx: FrameContext): Promise<WireTool[]> {
  const { deps } = fctx.turn;
  const root = isRoot(fctx);
  const ctx = await toolContext(fctx);
  const specs = await deps.tools.definitions(ctx);
  const external = specs
    .filter((s) => !isLoopTool(s.definition.function.name))
    .filter((s) => (root ? !s.subAgentsOnly : !s.rootAgentOnly))
    .map((s) => s.definition);
  const session = fctx.turn.session;
  // Servers pre-granted by the RunContext are the whole choice: nothing left to activate.
  const preGranted = (session.runContext.enabledMcpServers ?? []).length > 0;
  const own: WireTool[] = [UPDATE_SCRATCHPAD, WRITE_TODOS, ...(preGranted ? [] : [ACTIVATE_TOOLS]), LIST_AGENTS];
  // Nobody can answer a session that auto-denies (cron, tic): it is not offered the question.
  if (fctx.agent.type !== 'system' && !session.autoDenyApprovals) own.push(ASK_USER_CLARIFICATION);
  // Background sessions (jobs) delegate synchronously only: `execute_subtask`, never async tasks.
  if (fctx.frame.depth < deps.config.maxDepth) own.push(root && session.isInteractive ? EXECUTE_TASK : EXECUTE_SUBTASK);
  const allowed = [...external, ...own].filter((t) => fctx.agent.tools.allows(t.function.name));
  if (!deps.gate.visibleTools || allowed.length === 0) return allowed;
  const visible = await deps.gate.visibleTools({
    sessionId: ctx.sessionId,
    userId: ctx.userId,
    source: ctx.source,
    agentId: ctx.agentId,
    securityGroup: ctx.securityGroup ?? null,
    names: allowed.map((t) => t.function.name),
  });
  return visible ? allowed.filter((t) => visible.has(t.function.name)) : allowed;
}

/** The names a round offered, which its calls are checked against. */
export function offeredNames(tools: readonly WireTool[]): ReadonlySet<string> {
  return new Set(tools.map((t) => t.function.name));
}
