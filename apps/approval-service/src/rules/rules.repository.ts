import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { ApprovalRulesRow, ApprovalRulesVersionRow } from '@skald/persistence';
import { RuleRow } from './gate-input';

export interface StoredRule extends RuleRow {
  note: string | null;
  isSeed: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface RuleFields {
  name: string;
  toolPattern: string;
  pathPattern: string | null;
  commandPattern: string | null;
  agentId: string | null;
  source: string | null;
  securityGroup: string | null;
  action: ApprovalRulesRow['action'];
  priority: number;
  note: string | null;
}

/** Rules are deployment-wide (not per user): admin-only writes are enforced by the service. */
@Injectable()
export class RulesRepository {
  constructor(private readonly ds: Database) {}

  /** Bumped by a trigger on every change of `approval_rules` (read it before the rules it vouches for). */
  async version(): Promise<string> {
    const rows = await queryRows<Pick<ApprovalRulesVersionRow, 'version'>>(
      this.ds,
      `SELECT version FROM approval_rules_version`,
    );
    return rows[0]?.version ?? '0';
  }

  async listAll(): Promise<StoredRule[]> {
    const rows = await queryRows<ApprovalRulesRow>(this.ds, `SELECT * FROM approval_rules ORDER BY priority, ord`);
    return rows.map(toRule);
  }

  async find(id: string): Promise<StoredRule | null> {
    const rows = await queryRows<ApprovalRulesRow>(this.ds, `SELECT * FROM approval_rules WHERE id = $1`, [id]);
    return rows[0] ? toRule(rows[0]) : null;
  }

  async create(f: RuleFields): Promise<StoredRule> {
    const rows = await queryRows<ApprovalRulesRow>(
      this.ds,
      `INSERT INTO approval_rules (id, name, tool_pattern, path_pattern, command_pattern, agent_id, source, security_group, action, priority, note)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [randomUUID(), ...fieldParams(f)],
    );
    return toRule(rows[0]);
  }

  async update(id: string, f: RuleFields): Promise<StoredRule | null> {
    const rows = await queryRows<ApprovalRulesRow>(
      this.ds,
      `UPDATE approval_rules SET name = $2, tool_pattern = $3, path_pattern = $4, command_pattern = $5, agent_id = $6,
         source = $7, security_group = $8, action = $9, priority = $10, note = $11, updated_at = now()
       WHERE id = $1 RETURNING *`,
      [id, ...fieldParams(f)],
    );
    return rows[0] ? toRule(rows[0]) : null;
  }

  async delete(id: string): Promise<boolean> {
    const rows = await queryRows<Pick<ApprovalRulesRow, 'id'>>(
      this.ds,
      `DELETE FROM approval_rules WHERE id = $1 RETURNING id`,
      [id],
    );
    return rows.length > 0;
  }
}

function fieldParams(f: RuleFields): unknown[] {
  return [
    f.name,
    f.toolPattern,
    f.pathPattern,
    f.commandPattern,
    f.agentId,
    f.source,
    f.securityGroup,
    f.action,
    f.priority,
    f.note,
  ];
}

function toRule(r: ApprovalRulesRow): StoredRule {
  return {
    id: r.id,
    name: r.name,
    toolPattern: r.tool_pattern,
    pathPattern: r.path_pattern,
    commandPattern: r.command_pattern,
    agentId: r.agent_id,
    source: r.source,
    securityGroup: r.security_group,
    action: r.action,
    priority: r.priority,
    ord: Number(r.ord),
    note: r.note,
    isSeed: r.is_seed,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}
