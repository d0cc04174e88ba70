/** Per-turn and per-frame state threaded (by value) through the loop's modules. */
import { LoopInvariantError } from './errors';
import type { AgentDefinition, HumanAnswer, LoopDeps, ToolContext } from './ports';
import type {
  FrameRow,
  GrantScope,
  Mutation,
  RunContext,
  SessionEventDraft,
  SessionInfo,
  ToolCallSummary,
} from './types';

/** What a frame's round loop ended with (internal; the root's maps onto `TurnOutcome`). */
export type FrameOutcome =
  | {
      kind: 'final';
      messageId: string;
      content: string;
      reasoningContent: string | null;
      inputTokens: number | null;
      outputTokens: number | null;
      truncated: boolean;
      /** Read back from the store (the frame had already finished), not produced now. */
      replayed: boolean;
    }
  | { kind: 'cancelled' }
  | { kind: 'exhausted'; rounds: number }
  | { kind: 'failed'; error: string; code?: string }
  | { kind: 'parked'; toolCallId: string; requestId: string }
  /** Nothing to do (an empty frame). */
  | { kind: 'idle' };

export interface TurnContext {
  deps: LoopDeps;
  session: SessionInfo;
  /** Aborted by the caller's signal (/stop) or after a failed commit. */
  signal: AbortSignal;
  /** Aborts `signal`; used when a commit fails so no branch keeps working. */
  abort: AbortController;
  /** Set once a commit failed: every later commit rethrows it, nothing more is written. */
  dead: { error: unknown } | null;
  /** Every call recorded during this run, in recording order. */
  recorded: ToolCallSummary[];
  /** The frame driver (injected to keep the module graph acyclic). */
  runFrame: (frame: FrameContext) => Promise<FrameOutcome>;
  /** Recovery of a still-active child frame below a `running` delegation call (a parked
   *  parallel batch): resolves the child's subtree and returns the child's outcome. */
  resumeChild: (
    parent: FrameContext,
    child: FrameRow,
    preset?: { toolCallId: string; answer: HumanAnswer },
  ) => Promise<FrameOutcome>;
}

export interface FrameContext {
  turn: TurnContext;
  frame: FrameRow;
  agent: AgentDefinition;
  /** The parent frame's agent (null at the root). */
  parentAgentId: string | null;
  /** The frame's cancellation signal (a child of the parent's). */
  signal: AbortSignal;
}

/** The single write path: one atomic store commit. A failure (lease lost, crash) aborts the
 *  whole turn and is rethrown; later commits of the same turn rethrow it without writing. */
export async function commit(turn: TurnContext, mutations: Mutation[], events: SessionEventDraft[]): Promise<void> {
  if (turn.dead) throw turn.dead.error;
  if (mutations.length === 0 && events.length === 0) return;
  try {
    await turn.deps.store.commit(turn.session.id, mutations, events);
  } catch (error) {
    turn.dead ??= { error };
    turn.abort.abort();
    throw turn.dead.error;
  }
}

export async function loadAgent(turn: TurnContext, agentId: string): Promise<AgentDefinition> {
  const agent = await turn.deps.catalog.getAgent(agentId, turn.session.userId);
  if (!agent) throw new LoopInvariantError(`agent ${agentId} is not in the catalog`);
  return agent;
}

export function isRoot(fctx: FrameContext): boolean {
  return fctx.frame.parentToolCallId === null;
}

export function grantScope(fctx: FrameContext): GrantScope {
  return isRoot(fctx)
    ? { kind: 'session', sessionId: fctx.turn.session.id }
    : { kind: 'frame', frameId: fctx.frame.id };
}

export async function toolContext(fctx: FrameContext): Promise<ToolContext> {
  const { session, deps } = fctx.turn;
  return {
    sessionId: session.id,
    userId: session.userId,
    source: session.source,
    agentId: fctx.agent.id,
    frameId: fctx.frame.id,
    depth: fctx.frame.depth,
    grants: withEnabledServers(await deps.store.getGrants(grantScope(fctx)), session.runContext),
    runContext: session.runContext,
    securityGroup: session.securityGroup ?? null,
  };
}

/** The scope's grants and the RunContext's pre-granted servers, each once. */
function withEnabledServers(grants: string[], rc: RunContext): string[] {
  const extra = (rc.enabledMcpServers ?? []).filter((g) => !grants.includes(g));
  return extra.length > 0 ? [...grants, ...extra] : grants;
}

export function nowIso(turn: TurnContext): string {
  return turn.deps.clock.now().toISOString();
}
