import { z } from 'zod';
import { AgentId } from './agents';
import { BudgetLimits, BudgetLimitsDto } from './budgets';
import { Actor, Id, StoredText, Timestamp } from './common';
import { replyOf } from './reply';

/**
 * Groups of users (admin-managed, or brought by the identity provider's group claim at each
 * login). A user's groups decide which agents and LLM clients they may use (the union of the
 * groups' lists; a null list allows all; a user in no group may use everything) and the approval
 * security groups their sessions run under (the union of the groups' `security_groups`), and, for
 * groups with a `budget`, their limits (the most generous of those groups, per dimension).
 */
export const GroupSource = z.enum(['admin', 'idp']);
export type GroupSource = z.infer<typeof GroupSource>;

/** A group's name: 1–128 characters, unique without regard to case, no leading or trailing space. */
export const GroupName = StoredText(128)
  .min(1)
  .refine((t) => t.trim() === t, 'must not start or end with a space');
/** An LLM client's configured name (`SKALD_LLM_CLIENTS`). */
export const LlmClientName = StoredText(64).min(1);
/** An approval security group (the scope a rule names in `security_group`). */
export const SecurityGroupName = StoredText(128).min(1);

const AgentList = z.array(AgentId).max(200);
const ClientList = z.array(LlmClientName).max(200);
const SecurityGroups = z.array(SecurityGroupName).max(50);

export const GroupMemberDto = z.object({ user_id: Id, email: z.string(), source: GroupSource });
export const GroupDto = z.object({
  id: Id,
  name: z.string(),
  description: z.string(),
  allowed_agents: z.array(z.string()).nullable(),
  allowed_llm_clients: z.array(z.string()).nullable(),
  security_groups: z.array(z.string()),
  /** Each member's limits (null: none on that dimension); a group without any takes no part in budgets. */
  budget: BudgetLimitsDto,
  source: GroupSource,
  created_at: Timestamp,
  members: z.array(GroupMemberDto),
});
export type GroupDto = z.infer<typeof GroupDto>;
export const GroupList = z.object({ items: z.array(GroupDto) });

/** `POST /api/admin/groups`. */
export const CreateGroupRequest = z.strictObject({
  name: GroupName,
  description: StoredText(1000).default(''),
  allowed_agents: AgentList.nullable().default(null),
  allowed_llm_clients: ClientList.nullable().default(null),
  security_groups: SecurityGroups.default([]),
  budget: BudgetLimits.default({
    tokens_per_day: null,
    tokens_per_month: null,
    cost_usd_per_day: null,
    cost_usd_per_month: null,
  }),
});
export type CreateGroupRequest = z.infer<typeof CreateGroupRequest>;

/** `PATCH /api/admin/groups/{id}`: what is given replaces; at least one field. */
export const PatchGroupRequest = z
  .strictObject({
    name: GroupName.optional(),
    description: StoredText(1000).optional(),
    allowed_agents: AgentList.nullable().optional(),
    allowed_llm_clients: ClientList.nullable().optional(),
    security_groups: SecurityGroups.optional(),
    /** Replaces every limit of the group (a field left out: no limit on it). */
    budget: BudgetLimits.optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), 'nothing to change');
export type PatchGroupRequest = z.infer<typeof PatchGroupRequest>;

/** `POST /api/admin/groups/{id}/members`: admin memberships added and removed (identity-provider ones are the login's). */
export const GroupMembersRequest = z
  .strictObject({ add: z.array(Id).max(500).default([]), remove: z.array(Id).max(500).default([]) })
  .refine((v) => v.add.length + v.remove.length > 0, 'nothing to change');
export type GroupMembersRequest = z.infer<typeof GroupMembersRequest>;

// The session worker owns the groups; the gateway's admin routes and the login's sync call it on NATS.

/** A group as the session worker answers it: members by user id (the gateway adds their emails). */
export const BusGroup = GroupDto.extend({ members: z.array(z.object({ user_id: Id, source: GroupSource })) });
export type BusGroup = z.infer<typeof BusGroup>;

/** Every admin subject carries the actor: the session worker refuses anyone but an admin. */
export const GroupsListRequest = z.object({ actor: Actor });
export const GroupsCreateRequest = z.object({ actor: Actor, group: CreateGroupRequest });
export const GroupsUpdateRequest = z.object({ actor: Actor, group_id: Id, patch: PatchGroupRequest });
export const GroupsDeleteRequest = z.object({ actor: Actor, group_id: Id });
/** The user ids are the gateway's to check (it owns the users); the worker stores them as given. */
export const GroupsMembersBusRequest = z.object({ actor: Actor, group_id: Id, change: GroupMembersRequest });
/**
 * The login's sync: the actor is the user who just signed in, and only their own 'idp'
 * memberships change (there is no user id besides the actor's). `names` are group names already
 * cleaned of the claim (trimmed, once each, at most 200).
 */
export const GroupsSyncIdpRequest = z.object({ actor: Actor, names: z.array(GroupName).max(200) });

/**
 * `groups.policy`: what the groups of one user (`user_id`), or one group alone (`group_id`), decide —
 * the lists a turn of theirs is held to and the security groups the gate evaluates (then the default
 * rules). Anyone may ask for their own; only an admin for another user or a group (`forbidden`).
 */
export const GroupsPolicyRequest = z.union([
  z.object({ actor: Actor, user_id: Id }),
  z.object({ actor: Actor, group_id: Id }),
]);
export const GroupPolicyDto = z.object({
  /** The names of the groups that decide, sorted. */
  groups: z.array(z.string()),
  /** null: every agent. */
  allowed_agents: z.array(z.string()).nullable(),
  /** null: every LLM client. */
  allowed_llm_clients: z.array(z.string()).nullable(),
  security_groups: z.array(z.string()),
});
export type GroupPolicyDto = z.infer<typeof GroupPolicyDto>;

export const GROUP_SUBJECTS = {
  'groups.list': {
    request: GroupsListRequest,
    reply: replyOf(z.object({ items: z.array(BusGroup) })),
    queue: 'session-worker',
  },
  'groups.create': { request: GroupsCreateRequest, reply: replyOf(BusGroup), queue: 'session-worker' },
  'groups.update': { request: GroupsUpdateRequest, reply: replyOf(BusGroup), queue: 'session-worker' },
  'groups.delete': { request: GroupsDeleteRequest, reply: replyOf(z.object({})), queue: 'session-worker' },
  'groups.members': { request: GroupsMembersBusRequest, reply: replyOf(BusGroup), queue: 'session-worker' },
  'groups.sync_idp': { request: GroupsSyncIdpRequest, reply: replyOf(z.object({})), queue: 'session-worker' },
  'groups.policy': { request: GroupsPolicyRequest, reply: replyOf(GroupPolicyDto), queue: 'session-worker' },
} as const;
