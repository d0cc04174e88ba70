import { Injectable } from '@nestjs/common';
import type { GroupMembersRow, GroupsRow } from '@skald/persistence';
import { Database } from '@skald/persistence/database';
import { queryRows, type Queryable } from '@skald/persistence/query-rows';
import type { Limits } from '../budgets/budget-rules';
import { limitsOfRow } from '../budgets/budgets.repository';

/** The fields of a group an admin sets. */
export interface GroupFields {
  name: string;
  description: string;
  allowedAgents: string[] | null;
  allowedLlmClients: string[] | null;
  securityGroups: string[];
  /** Each member's limits (null: none on that dimension). */
  budget: Limits;
}

/** A group as the session worker keeps it: what an admin sets, where it came from, its members (by user id). */
export interface Group extends GroupFields {
  id: string;
  source: GroupsRow['source'];
  createdAt: Date;
  members: { userId: string; source: GroupMembersRow['source'] }[];
}

/** What the group logic needs of the tables (the repository, or a fake in unit specs). */
export interface GroupStore {
  list(): Promise<Group[]>;
  find(id: string): Promise<Group | null>;
  /** Inserts an admin group; null when the name is taken (without regard to case). */
  create(fields: GroupFields): Promise<Group | null>;
  /** Applies the given fields; 'missing' for an unknown group, 'taken' for a name in use by another group. */
  update(id: string, patch: Partial<GroupFields>): Promise<Group | 'missing' | 'taken'>;
  delete(id: string): Promise<boolean>;
  /** Adds and removes admin memberships of one group (user ids as given); false for an unknown group. */
  changeAdminMembers(groupId: string, add: string[], remove: string[]): Promise<boolean>;
  /**
   * Makes the user's identity-provider memberships exactly the groups named (case-insensitive),
   * creating the missing ones as 'idp' groups, in one transaction; admin memberships stay.
   */
  setIdpMemberships(userId: string, names: string[]): Promise<void>;
}

type GroupRead = GroupsRow & { members: { user_id: string; source: GroupMembersRow['source'] }[] };

const GROUP_SELECT = `SELECT g.*, COALESCE((
    SELECT json_agg(json_build_object('user_id', m.user_id, 'source', m.source) ORDER BY m.user_id, m.source)
      FROM group_members m WHERE m.group_id = g.id), '[]'::json) AS members
  FROM groups g`;

function toGroup(r: GroupRead): Group {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    allowedAgents: r.allowed_agents,
    allowedLlmClients: r.allowed_llm_clients,
    securityGroups: r.security_groups,
    budget: limitsOfRow({
      tokens_day: r.budget_tokens_day,
      tokens_month: r.budget_tokens_month,
      cost_day_usd: r.budget_cost_day_usd,
      cost_month_usd: r.budget_cost_month_usd,
    }),
    source: r.source,
    createdAt: r.created_at,
    members: r.members.map((m) => ({ userId: m.user_id, source: m.source })),
  };
}

/** The four budget columns' parameters, in column order (all null without a budget). */
function budgetParams(b: Limits | null): (number | null)[] {
  return [
    b?.tokens_per_day ?? null,
    b?.tokens_per_month ?? null,
    b?.cost_usd_per_day ?? null,
    b?.cost_usd_per_month ?? null,
  ];
}

const UNIQUE_VIOLATION = '23505';
function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: unknown; driverError?: { code?: unknown } };
  return err.code === UNIQUE_VIOLATION || err.driverError?.code === UNIQUE_VIOLATION;
}

/** `groups` and `group_members`: the session worker's, beside the agents catalog. */
@Injectable()
export class GroupsRepository implements GroupStore {
  constructor(private readonly ds: Database) {}

  async list(): Promise<Group[]> {
    return (await queryRows<GroupRead>(this.ds, `${GROUP_SELECT} ORDER BY lower(g.name)`)).map(toGroup);
  }

  async find(id: string, db: Queryable = this.ds): Promise<Group | null> {
    const [row] = await queryRows<GroupRead>(db, `${GROUP_SELECT} WHERE g.id = $1`, [id]);
    return row ? toGroup(row) : null;
  }

  async create(f: GroupFields): Promise<Group | null> {
    const rows = await queryRows<Pick<GroupsRow, 'id'>>(
      this.ds,
      `INSERT INTO groups (id, name, description, allowed_agents, allowed_llm_clients, security_groups, source,
                           budget_tokens_day, budget_tokens_month, budget_cost_day_usd, budget_cost_month_usd)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, 'admin', $6, $7, $8, $9) ON CONFLICT DO NOTHING RETURNING id`,
      [f.name, f.description, f.allowedAgents, f.allowedLlmClients, f.securityGroups, ...budgetParams(f.budget)],
    );
    return rows[0] ? this.find(rows[0].id) : null;
  }

  async update(id: string, p: Partial<GroupFields>): Promise<Group | 'missing' | 'taken'> {
    let rows: Pick<GroupsRow, 'id'>[];
    try {
      rows = await queryRows<Pick<GroupsRow, 'id'>>(
        this.ds,
        `UPDATE groups SET name = COALESCE($2, name), description = COALESCE($3, description),
                allowed_agents = CASE WHEN $4::boolean THEN $5::text[] ELSE allowed_agents END,
                allowed_llm_clients = CASE WHEN $6::boolean THEN $7::text[] ELSE allowed_llm_clients END,
                security_groups = COALESCE($8, security_groups),
                budget_tokens_day = CASE WHEN $9::boolean THEN $10::bigint ELSE budget_tokens_day END,
                budget_tokens_month = CASE WHEN $9::boolean THEN $11::bigint ELSE budget_tokens_month END,
                budget_cost_day_usd = CASE WHEN $9::boolean THEN $12::numeric ELSE budget_cost_day_usd END,
                budget_cost_month_usd = CASE WHEN $9::boolean THEN $13::numeric ELSE budget_cost_month_usd END
          WHERE id = $1 RETURNING id`,
        [
          id,
          p.name ?? null,
          p.description ?? null,
          p.allowedAgents !== undefined,
          p.allowedAgents ?? null,
          p.allowedLlmClients !== undefined,
          p.allowedLlmClients ?? null,
          p.securityGroups ?? null,
          p.budget !== undefined,
          ...budgetParams(p.budget ?? null),
        ],
      );
    } catch (e) {
      if (isUniqueViolation(e)) return 'taken';
      throw e;
    }
    if (rows.length === 0) return 'missing';
    return (await this.find(id)) ?? 'missing';
  }

  async delete(id: string): Promise<boolean> {
    const rows = await queryRows<Pick<GroupsRow, 'id'>>(this.ds, `DELETE FROM groups WHERE id = $1 RETURNING id`, [id]);
    return rows.length > 0;
  }

  async changeAdminMembers(groupId: string, add: string[], remove: string[]): Promise<boolean> {
    return this.ds.transaction(async (tx) => {
      const g = await queryRows<Pick<GroupsRow, 'id'>>(tx, `SELECT id FROM groups WHERE id = $1 FOR UPDATE`, [groupId]);
      if (g.length === 0) return false;
      await tx.query(
        `DELETE FROM group_members WHERE group_id = $1 AND source = 'admin' AND user_id = ANY($2::uuid[])`,
        [groupId, remove],
      );
      await tx.query(
        `INSERT INTO group_members (group_id, user_id, source)
         SELECT $1, u, 'admin' FROM unnest($2::uuid[]) u ON CONFLICT DO NOTHING`,
        [groupId, add],
      );
      return true;
    });
  }

  async setIdpMemberships(userId: string, names: string[]): Promise<void> {
    await this.ds.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO groups (id, name, source) SELECT gen_random_uuid(), n, 'idp' FROM unnest($1::text[]) n
         ON CONFLICT DO NOTHING`,
        [names],
      );
      const ids = (
        await queryRows<Pick<GroupsRow, 'id'>>(
          tx,
          `SELECT id FROM groups WHERE lower(name) IN (SELECT lower(n) FROM unnest($1::text[]) n)`,
          [names],
        )
      ).map((r) => r.id);
      await tx.query(
        `DELETE FROM group_members WHERE user_id = $1 AND source = 'idp' AND group_id <> ALL($2::uuid[])`,
        [userId, ids],
      );
      await tx.query(
        `INSERT INTO group_members (group_id, user_id, source) SELECT g, $1, 'idp' FROM unnest($2::uuid[]) g
         ON CONFLICT DO NOTHING`,
        [userId, ids],
      );
    });
  }
}
