import { Injectable } from '@nestjs/common';
import type { GroupsRow } from '@skald/persistence';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import { ownerGroupsJson, policyOfJson, resolveGroupPolicy, type GroupPolicy } from './group-policy';

/** What decides a user's policy, as a caller outside a turn asks for it (a user's, or one group's alone). */
export interface GroupPolicyReader {
  /** What the user's groups allow now (the turn's start reads the same column in its own statement). */
  ofUser(userId: string): Promise<GroupPolicy>;
  /** What one group alone allows (an admin's rule test "as a member of"); null for an unknown group. */
  ofGroup(groupId: string): Promise<GroupPolicy | null>;
}

/**
 * A user's policy read outside a turn: session creation, pins, the agent and client lists, /context
 * and /compact, the rules tester. One statement through the index on `group_members (user_id)`;
 * the SQL and the rule are the turn's (`ownerGroupsJson`, `resolveGroupPolicy`), never a copy.
 */
@Injectable()
export class GroupPolicyRepository implements GroupPolicyReader {
  constructor(private readonly ds: Database) {}

  async ofUser(userId: string): Promise<GroupPolicy> {
    const [row] = await queryRows<{ owner_groups: string }>(
      this.ds,
      `SELECT ${ownerGroupsJson('$1::uuid')} AS owner_groups`,
      [userId],
    );
    return policyOfJson(row?.owner_groups ?? '[]');
  }

  async ofGroup(groupId: string): Promise<GroupPolicy | null> {
    const [g] = await queryRows<Pick<GroupsRow, 'name' | 'allowed_agents' | 'allowed_llm_clients' | 'security_groups'>>(
      this.ds,
      `SELECT name, allowed_agents, allowed_llm_clients, security_groups FROM groups WHERE id = $1::uuid`,
      [groupId],
    );
    return g ? resolveGroupPolicy([g]) : null;
  }
}
