import type { LlmRefusal } from '@skald/agent-loop';

/** One of the session owner's groups, as the turn reads it (a `groups` row). */
export interface OwnerGroup {
  name: string;
  /** null: every agent. */
  allowed_agents: string[] | null;
  /** null: every LLM client. */
  allowed_llm_clients: string[] | null;
  security_groups: string[];
}

/**
 * What the owner's groups allow, read at the start of each turn (so a change of groups applies from
 * the next turn on, cron jobs and async tasks included: they run turns too).
 * - `agents` / `clients`: the union of the groups' lists; null (everything) when the owner is in no
 *   group or one of their groups allows everything.
 * - `securityGroups`: the union of the groups' approval security groups (sorted): the gate evaluates
 *   their rules, then the default rules.
 */
export interface GroupPolicy {
  groups: string[];
  agents: ReadonlySet<string> | null;
  clients: ReadonlySet<string> | null;
  securityGroups: string[];
}

/** No group: everything allowed, no security group (what a user in no group gets). */
export const NO_GROUPS: GroupPolicy = { groups: [], agents: null, clients: null, securityGroups: [] };

function union(lists: readonly (readonly string[] | null)[]): ReadonlySet<string> | null {
  if (lists.length === 0 || lists.some((l) => l === null)) return null;
  return new Set(lists.flatMap((l) => l ?? []));
}

export function resolveGroupPolicy(groups: readonly OwnerGroup[]): GroupPolicy {
  if (groups.length === 0) return NO_GROUPS;
  return {
    groups: groups.map((g) => g.name).sort((a, b) => a.localeCompare(b)),
    agents: union(groups.map((g) => g.allowed_agents)),
    clients: union(groups.map((g) => g.allowed_llm_clients)),
    securityGroups: [...new Set(groups.flatMap((g) => g.security_groups))].sort(),
  };
}

const named = (p: GroupPolicy): string => p.groups.map((g) => `"${g}"`).join(', ');
const listed = (s: ReadonlySet<string>): string =>
  s.size === 0
    ? 'none'
    : [...s]
        .sort()
        .map((x) => `"${x}"`)
        .join(', ');

/** The refusal of a model call by an agent the owner's groups do not allow; null when allowed. */
export function agentRefusal(p: GroupPolicy, agentId: string): LlmRefusal | null {
  if (!p.agents || p.agents.has(agentId)) return null;
  return {
    code: 'forbidden',
    message: `The agent "${agentId}" is not allowed for your groups (${named(p)}); allowed agents: ${listed(p.agents)}.`,
  };
}

/** The refusal of a model call on a client (a pin: the session's, the agent's) the owner's groups do not allow. */
export function clientRefusal(p: GroupPolicy, client: string): LlmRefusal | null {
  if (!p.clients || p.clients.has(client)) return null;
  return {
    code: 'forbidden',
    message: `The LLM client "${client}" is not allowed for your groups (${named(p)}); allowed LLM clients: ${listed(p.clients)}.`,
  };
}

/** The refusal when none of the configured clients is allowed (AUTO selection would have nothing to choose). */
export function noClientRefusal(p: GroupPolicy, configured: readonly string[]): LlmRefusal | null {
  if (!p.clients || configured.some((c) => p.clients!.has(c))) return null;
  return {
    code: 'forbidden',
    message: `No configured LLM client is allowed for your groups (${named(p)}); allowed LLM clients: ${listed(p.clients)}.`,
  };
}

/** The configured clients AUTO selection must pass over (they count as already tried). */
export function disallowedClients(p: GroupPolicy, configured: readonly string[]): string[] {
  return p.clients ? configured.filter((c) => !p.clients!.has(c)) : [];
}

/**
 * The groups of the user `userSql` (an SQL expression) as JSON text, one object per group in name
 * order: the column the turn's start statement reads and {@link GroupPolicyRepository} reads alone.
 */
export function ownerGroupsJson(userSql: string, extraFields = ''): string {
  return `(SELECT COALESCE(json_agg(json_build_object('name', g.name, 'allowed_agents', g.allowed_agents,
                           'allowed_llm_clients', g.allowed_llm_clients, 'security_groups', g.security_groups${extraFields})
                           ORDER BY g.name), '[]'::json) FROM groups g
   WHERE g.id IN (SELECT m.group_id FROM group_members m WHERE m.user_id = ${userSql}))::text`;
}

/** {@link ownerGroupsJson}'s text as the policy it decides. */
export function policyOfJson(text: string): GroupPolicy {
  return resolveGroupPolicy(JSON.parse(text) as OwnerGroup[]);
}

/** The agents of the list (in its order) the policy allows. */
export function allowedAgents<T extends { id: string }>(p: GroupPolicy, agents: readonly T[]): T[] {
  return p.agents ? agents.filter((a) => p.agents!.has(a.id)) : [...agents];
}
