import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { GateContextReply, RunContextDto } from '@skald/contracts';

interface RunContextRow {
  run_context: unknown;
  security_group: string | null;
}

/** The RunContext of one session of one user (`sessions.run_context`, `sessions.security_group`). */
@Injectable()
export class RunContextRepository {
  constructor(private readonly ds: Database) {}

  async get(scope: { userId: string; sessionId: string }): Promise<RunContextDto | null> {
    const rows = await queryRows<RunContextRow>(
      this.ds,
      `SELECT run_context, security_group FROM sessions WHERE id = $1 AND user_id = $2`,
      [scope.sessionId, scope.userId],
    );
    return rows[0] ? toDto(rows[0]) : null;
  }

  /** What the gate is asked with for a call of the session's root agent (`session.gate_context`). */
  async gateContext(scope: { userId: string; sessionId: string }): Promise<GateContextReply | null> {
    const rows = await queryRows<RunContextRow & { agent_id: string; source: string; auto_deny_approvals: boolean }>(
      this.ds,
      `SELECT agent_id, source, auto_deny_approvals, run_context, security_group FROM sessions WHERE id = $1 AND user_id = $2`,
      [scope.sessionId, scope.userId],
    );
    const r = rows[0];
    if (!r) return null;
    const rc = toDto(r);
    return {
      agent_id: r.agent_id,
      source: r.source,
      security_group: rc.security_group,
      auto_deny: Boolean(r.auto_deny_approvals),
      run_context: {
        working_directory: rc.working_directory,
        allow_fs_reads: rc.allow_fs_reads,
        allow_fs_writes: rc.allow_fs_writes,
      },
    };
  }

  /** Replaces the RunContext; `securityGroup` undefined leaves the group as it is. */
  async set(
    scope: { userId: string; sessionId: string },
    rc: {
      working_directory?: string;
      system_prompt?: string[];
      allow_fs_reads?: string[];
      allow_fs_writes?: string[];
      enabled_mcp_servers?: string[];
    },
    securityGroup: string | undefined,
  ): Promise<RunContextDto | null> {
    const stored = {
      ...(rc.working_directory ? { working_directory: rc.working_directory } : {}),
      ...(rc.system_prompt?.length ? { system_prompt: rc.system_prompt } : {}),
      ...(rc.allow_fs_reads?.length ? { allow_fs_reads: rc.allow_fs_reads } : {}),
      ...(rc.allow_fs_writes?.length ? { allow_fs_writes: rc.allow_fs_writes } : {}),
      ...(rc.enabled_mcp_servers?.length ? { enabled_mcp_servers: rc.enabled_mcp_servers } : {}),
    };
    const rows = await queryRows<RunContextRow>(
      this.ds,
      `UPDATE sessions SET run_context = $3::jsonb, security_group = COALESCE($4, security_group), updated_at = now()
        WHERE id = $1 AND user_id = $2 RETURNING run_context, security_group`,
      [scope.sessionId, scope.userId, JSON.stringify(stored), securityGroup ?? null],
    );
    return rows[0] ? toDto(rows[0]) : null;
  }
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function toDto(r: RunContextRow): RunContextDto {
  const rc = (r.run_context && typeof r.run_context === 'object' ? r.run_context : {}) as Record<string, unknown>;
  return {
    security_group: r.security_group && r.security_group !== '' ? r.security_group : null,
    system_prompt: strings(rc.system_prompt),
    allow_fs_reads: strings(rc.allow_fs_reads),
    allow_fs_writes: strings(rc.allow_fs_writes),
    working_directory: typeof rc.working_directory === 'string' ? rc.working_directory : null,
    enabled_mcp_servers: strings(rc.enabled_mcp_servers),
  };
}
