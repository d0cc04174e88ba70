import { z } from 'zod';
import { Actor, Source, StoredText } from './common';
import { replyOf } from './reply';
import { ToolPatternText } from './tool-registry/tool-patterns';

/**
 * The agents catalog (owned by the session worker): built-in agents are files in the repository
 * (`agents/<id>/AGENT.md` + `meta.json`); a user may override one (prompt and / or meta) or add
 * agents of their own. Slash commands the session worker answers, and the user's home source.
 */

/** An agent id: lower-case letters, digits, `-` and `_`, starting with a letter or digit. */
export const AgentId = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,47}$/, 'agent id must match [a-z0-9][a-z0-9_-]{0,47}');
export const AgentType = z.enum(['chat', 'task', 'system']);
export const AgentStrength = z.enum(['very_low', 'low', 'medium', 'high', 'very_high']);
/** An agent's tool filter as written: every entry a tool pattern (`ToolPatternText`: `*`, a name, a glob, a group). */
const ToolFilter = z.strictObject({
  allow: z.array(ToolPatternText(128)).max(200).default([]),
  deny: z.array(ToolPatternText(128)).max(200).default([]),
});
/** As a row holds it: entries unchecked; one that does not parse matches no tool (`compileToolFilter`). */
const StoredToolFilter = z.strictObject({
  allow: z.array(StoredText(128).min(1)).max(200).default([]),
  deny: z.array(StoredText(128).min(1)).max(200).default([]),
});
/** A memory document path (`user-memory/…` or `shared-memory/…`). */
export const MemoryDocPath = StoredText(600).regex(
  /^(user-memory|shared-memory)\/[^\0]+$/,
  'must be a memory path: user-memory/… or shared-memory/…',
);

/** `meta.json` of an agent. */
export const AgentMeta = z.strictObject({
  name: StoredText(100).min(1),
  description: StoredText(2000).nullable().default(null),
  type: AgentType,
  /** An LLM client name; null → AUTO selection by strength (and scope). */
  client: StoredText(100).min(1).nullable().default(null),
  /** Scope for AUTO selection (e.g. `coding`); null → any client. */
  scope: StoredText(100).min(1).nullable().default(null),
  strength: AgentStrength.nullable().default(null),
  /** Memory documents appended to the static system prompt, in order (missing ones are skipped). */
  inject_memory: z.array(MemoryDocPath).max(20).default([]),
  /** A short reminder sent as the last system message of every request (never cached). */
  instructions: StoredText(4000).nullable().default(null),
  /**
   * Tool filters in the tool-pattern language of the approval rules (`*`, a name, a glob, a group
   * such as `@read_only` or `@fs_write`); deny wins; an empty allow list allows everything.
   */
  tools: ToolFilter.default({ allow: [], deny: [] }),
});
export type AgentMeta = z.infer<typeof AgentMeta>;
/** `meta` of a `user_agents` row: AgentMeta, with the tool filters as they may have been stored. */
export const StoredAgentMeta = AgentMeta.extend({ tools: StoredToolFilter.default({ allow: [], deny: [] }) });
/** What `PUT /api/agents/{id}` may change in `meta`: any field, the others are kept. */
export const AgentMetaPatch = AgentMeta.partial();

export const PutAgentRequest = z
  .strictObject({
    /** The AGENT.md text (directives allowed). */
    prompt: StoredText(256 * 1024)
      .min(1)
      .optional(),
    meta: z
      .strictObject({
        name: StoredText(100).min(1).optional(),
        description: StoredText(2000).nullable().optional(),
        type: AgentType.optional(),
        client: StoredText(100).min(1).nullable().optional(),
        scope: StoredText(100).min(1).nullable().optional(),
        strength: AgentStrength.nullable().optional(),
        inject_memory: z.array(MemoryDocPath).max(20).optional(),
        instructions: StoredText(4000).nullable().optional(),
        tools: ToolFilter.optional(),
      })
      .optional(),
  })
  .refine((r) => r.prompt !== undefined || r.meta !== undefined, 'send prompt, meta or both');

/** `GET /api/agents` item (task agents only: what `list_agents` returns). */
export const AgentSummaryDto = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  strength: z.string().nullable().optional(),
});
export const AgentList = z.object({ items: z.array(AgentSummaryDto) });
export type AgentList = z.infer<typeof AgentList>;
/** `GET /api/agents/{id}`: the agent as the caller sees it (with the caller's override). */
export const AgentDetail = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  type: AgentType,
  client: z.string().nullable(),
  scope: z.string().nullable(),
  strength: z.string().nullable(),
  inject_memory: z.array(z.string()),
  instructions: z.string().nullable(),
  tools: z.object({ allow: z.array(z.string()), deny: z.array(z.string()) }),
  /** The AGENT.md text in effect (directives unresolved). */
  prompt: z.string(),
  /** `builtin`: from the repository; `custom`: the caller's own agent. */
  origin: z.enum(['builtin', 'custom']),
  /** The caller has an override of this built-in agent. */
  overridden: z.boolean(),
  updated_at: z.string().nullable(),
});
export type AgentDetail = z.infer<typeof AgentDetail>;

export const AgentsListRequest = z.object({ actor: Actor });
export const AgentGetRequest = z.object({ actor: Actor, agent_id: AgentId });
export const AgentPutRequest = z.object({
  actor: Actor,
  agent_id: AgentId,
  prompt: StoredText(256 * 1024).optional(),
  /** Validated field by field by the gateway (PutAgentRequest: every text a StoredText). */
  meta: z.record(StoredText(100), z.unknown()).optional(),
});
export const AgentDeleteOverrideRequest = z.object({ actor: Actor, agent_id: AgentId });
export const AgentDeleteOverrideReply = z.object({ deleted: z.boolean() });

/**
 * Every slash command, in the order the help lists them: who answers it (`gateway`: the gateway
 * itself; `session-worker`: the worker that owns the session's state; `llm`: the gateway from the
 * model registry), how it is written and what it does. An unknown command gets the help.
 */
export const SLASH_COMMANDS = {
  '/stop': { answeredBy: 'gateway', usage: '/stop', help: 'stop the running turn' },
  '/new': { answeredBy: 'gateway', usage: '/new', help: 'start a new conversation (new session)' },
  '/clear': {
    answeredBy: 'session-worker',
    usage: '/clear',
    help: 'clear this conversation: the agent and the chat start empty (scratchpad and tools kept)',
  },
  '/compact': {
    answeredBy: 'session-worker',
    usage: '/compact',
    help: 'fold the older messages into the conversation summary now',
  },
  '/context': {
    answeredBy: 'session-worker',
    usage: '/context',
    help: 'what the context sent to the model holds, with token estimates',
  },
  '/resettools': {
    answeredBy: 'session-worker',
    usage: '/resettools',
    help: 'deactivate the tool groups the agent activated (activate_tools)',
  },
  '/sethome': { answeredBy: 'session-worker', usage: '/sethome', help: 'send notifications to this source' },
  '/models': { answeredBy: 'llm', usage: '/models', help: 'the models, their health, and which one is pinned here' },
  '/model': {
    answeredBy: 'llm',
    usage: '/model N',
    help: 'pin a model for this source by number or name (/model auto: automatic choice)',
  },
  '/cost': { answeredBy: 'llm', usage: '/cost', help: "tokens and cost of this conversation, and today's budget" },
  '/help': { answeredBy: 'gateway', usage: '/help', help: 'this list' },
} as const satisfies Record<
  `/${string}`,
  { answeredBy: 'gateway' | 'session-worker' | 'llm'; usage: string; help: string }
>;
export type SlashCommand = keyof typeof SLASH_COMMANDS;
export type SlashCommandAnswerer = (typeof SLASH_COMMANDS)[SlashCommand]['answeredBy'];
/** The commands of one answerer. */
export type SlashCommandOf<A extends SlashCommandAnswerer> = {
  [C in SlashCommand]: (typeof SLASH_COMMANDS)[C]['answeredBy'] extends A ? C : never;
}[SlashCommand];
export type WorkerCommand = SlashCommandOf<'session-worker'>;
/** Slash commands answered by the session worker (derived from `SLASH_COMMANDS`). */
export const WORKER_COMMANDS = (Object.keys(SLASH_COMMANDS) as SlashCommand[]).filter(
  (c): c is WorkerCommand => SLASH_COMMANDS[c].answeredBy === 'session-worker',
) as [WorkerCommand, ...WorkerCommand[]];
/** Whether a command is one of `answerer`'s. */
export function isAnsweredBy<A extends SlashCommandAnswerer>(
  answerer: A,
  command: SlashCommand,
): command is SlashCommandOf<A> {
  return SLASH_COMMANDS[command].answeredBy === answerer;
}
/** Whether a word is a slash command of the table. */
export function isSlashCommand(word: string): word is SlashCommand {
  return Object.prototype.hasOwnProperty.call(SLASH_COMMANDS, word);
}
/** The help text: every command with its usage, as the table lists them. */
export const SLASH_HELP_TEXT = [
  'Commands:',
  ...(Object.keys(SLASH_COMMANDS) as SlashCommand[]).map(
    (c) => `  ${SLASH_COMMANDS[c].usage.padEnd(13)}${SLASH_COMMANDS[c].help}`,
  ),
].join('\n');
export const SessionCommandRequest = z.object({
  actor: Actor,
  source: Source,
  command: z.enum(WORKER_COMMANDS),
  /** Whatever followed the command word. */
  args: StoredText(4000).default(''),
});
export const SessionCommandReply = z.object({ command: z.string(), content: z.string() });
/** The source that gets the user's notifications (`web` until `/sethome` names another). */
export const HomeSourceRequest = z.object({ actor: Actor });
export const HomeSourceReply = z.object({ source: z.string() });

/** Spread into `SUBJECTS` (subjects.ts). */
export const AGENT_SUBJECTS = {
  'agents.list': { request: AgentsListRequest, reply: replyOf(AgentList), queue: 'session-worker' },
  'agents.get': { request: AgentGetRequest, reply: replyOf(AgentDetail), queue: 'session-worker' },
  'agents.put': { request: AgentPutRequest, reply: replyOf(AgentDetail), queue: 'session-worker' },
  'agents.delete_override': {
    request: AgentDeleteOverrideRequest,
    reply: replyOf(AgentDeleteOverrideReply),
    queue: 'session-worker',
  },
  'session.command': { request: SessionCommandRequest, reply: replyOf(SessionCommandReply), queue: 'session-worker' },
  'session.home_source': { request: HomeSourceRequest, reply: replyOf(HomeSourceReply), queue: 'session-worker' },
} as const;
