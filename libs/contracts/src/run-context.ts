import { z } from 'zod';
import { Actor, Id, Role, StoredText } from './common';
import { McpServerName } from './mcp';
import { resolvePathAgainst, resolveSessionDirectory, WORKSPACE_ROOT } from './tool-paths';

/** A path of a RunContext: inside the workspace (`/workspace/…` or relative to it), normalised to `/workspace/…`. */
const WorkspacePathField = StoredText(4096)
  .min(1)
  .transform((p, ctx) => {
    const r = resolvePathAgainst(p, { kind: 'workspace', virtual: WORKSPACE_ROOT, segments: [] }, 'path');
    if (!r.ok || r.value.kind !== 'workspace') {
      ctx.addIssue({ code: 'custom', message: r.ok ? `${p} is a memory path, not a workspace path` : r.message });
      return z.NEVER;
    }
    return r.value.virtual;
  });

/**
 * RunContext fields that choose which approval rules apply (a security group's rules are evaluated
 * before the org-wide ones): an admin's to set, on every route, frame and subject that takes a
 * RunContext (`PUT /api/sessions/{id}/run-context`, `POST` / `PATCH /api/cron/jobs`, and any added
 * later: test/integration/run-context-policy.spec.ts finds them from the route table). The other
 * fields are the user's: paths inside their own workspace (a Deny rule still wins), their prompt,
 * their own MCP servers to enable without `activate_tools` (`enabled_mcp_servers`), and
 * `allow_approvals` (a cron run asks a human instead of auto-denying).
 */
export const ADMIN_ONLY_RUN_CONTEXT_FIELDS = ['security_group'] as const;
export type AdminOnlyRunContextField = (typeof ADMIN_ONLY_RUN_CONTEXT_FIELDS)[number];

/**
 * The one check: the first admin-only field a RunContext sets that `role` may not set, or null.
 * A field counts as set when present with any value other than `undefined` (an empty string or
 * `null` is still a choice of group, and refused). Every handler that takes a RunContext from a
 * caller, and the scheduler at every fire of a job, asks this.
 */
export function adminOnlyRunContextField(
  rc: Readonly<Record<string, unknown>> | null | undefined,
  role: Role,
): AdminOnlyRunContextField | null {
  if (role === 'admin' || rc === null || rc === undefined) return null;
  for (const f of ADMIN_ONLY_RUN_CONTEXT_FIELDS) if (rc[f] !== undefined) return f;
  return null;
}

/** The sentence a refusal carries (the field is named in the error's `field`). */
export const adminOnlyRunContextMessage = (field: string): string => `only an admin sets ${field}`;

/**
 * A pre-authorised path: a directory or file inside the workspace; it covers everything under it.
 * It is no pattern: a `*` (what a rule glob would read as a wildcard) is refused, naming that form.
 */
const PreAuthorisedPath = WorkspacePathField.superRefine((p, ctx) => {
  if (p.includes('*'))
    ctx.addIssue({
      code: 'custom',
      message: `${p} holds a \`*\`: a pre-authorised path is a directory or file inside the workspace and covers everything under it (write /workspace/proj, not /workspace/proj/*); patterns are not supported`,
    });
});

/**
 * MCP servers (by name) enabled for every round of a session, cron run or async task without the
 * agent activating them: their tools are offered from the first round, and `activate_tools` is not
 * offered (the override is the whole choice). Each must be one of the caller's own servers: the
 * gateway refuses any other, naming it (`enabledMcpServersRefusal`). Their calls still pass the gate.
 */
export const EnabledMcpServers = z
  .array(McpServerName)
  .max(64)
  .superRefine((names, ctx) => {
    const seen = new Set<string>();
    names.forEach((n, i) => {
      if (seen.has(n)) ctx.addIssue({ code: 'custom', path: [i], message: `${n} is named twice` });
      seen.add(n);
    });
  });

/**
 * The refusal of a RunContext's `enabled_mcp_servers` against the caller's servers (`own`), or
 * null: the first entry naming no server of theirs, or one of theirs that is disabled (it would
 * offer nothing), with its field (`at` is where the RunContext sits in the body, `run_context` of a
 * cron job).
 */
export function enabledMcpServersRefusal(
  names: readonly string[] | undefined,
  own: ReadonlyArray<{ name: string; enabled: boolean }>,
  at = '',
): { field: string; message: string } | null {
  const byName = new Map(own.map((s) => [s.name, s]));
  for (const [i, name] of (names ?? []).entries()) {
    if (byName.get(name)?.enabled === true) continue;
    const field = `${at ? `${at}.` : ''}enabled_mcp_servers.${i}`;
    const message = byName.has(name)
      ? `${field}: your MCP server ${name} is disabled; enable it first (PATCH /api/mcp/servers/${name} {"enabled": true})`
      : `${field}: you have no MCP server named ${name}`;
    return { field, message };
  }
  return null;
}

/**
 * What a user sets of a RunContext, as taken from any caller: the working directory (the base of
 * relative paths and of commands), pre-authorised paths (reads, writes inside them need no
 * approval; a Deny rule still wins), every path inside the workspace and normalised, and the MCP
 * servers enabled from the start (`EnabledMcpServers`); `security_group` is an admin's to set. A session's (`RunContextInput`) and a cron job's
 * (`JobRunContextInput`) are these fields.
 */
export const RUN_CONTEXT_INPUT_FIELDS = {
  security_group: StoredText(64).min(1).optional(),
  system_prompt: z.array(StoredText(10_000)).max(20).optional(),
  allow_fs_writes: z.array(PreAuthorisedPath).max(100).optional(),
  allow_fs_reads: z.array(PreAuthorisedPath).max(100).optional(),
  working_directory: StoredText(4096)
    .transform((p, ctx) => {
      if (p === '') return undefined;
      const r = resolveSessionDirectory(p);
      if (!r.ok) {
        ctx.addIssue({ code: 'custom', message: r.message });
        return z.NEVER;
      }
      return r.value.virtual;
    })
    .optional(),
  enabled_mcp_servers: EnabledMcpServers.optional(),
};

/** `PUT /sessions/{id}/run-context`: one of the user's sessions. A field left out is cleared. */
export const RunContextInput = z.object(RUN_CONTEXT_INPUT_FIELDS).strict();
export type RunContextInput = z.output<typeof RunContextInput>;

/** A session's RunContext as stored and shown (paths normalised). */
export const RunContextDto = z.object({
  security_group: z.string().nullable(),
  system_prompt: z.array(z.string()),
  allow_fs_writes: z.array(z.string()),
  allow_fs_reads: z.array(z.string()),
  working_directory: z.string().nullable(),
  enabled_mcp_servers: z.array(z.string()),
});
export type RunContextDto = z.infer<typeof RunContextDto>;

/** `session.run_context.get` / `session.run_context.set` (queue `session-worker`): one session of the actor. */
export const RunContextGetRequest = z.object({ actor: Actor, session_id: Id });
export const RunContextSetRequest = z.object({
  actor: Actor,
  session_id: Id,
  run_context: z.object({
    security_group: StoredText(64).optional(),
    system_prompt: z.array(StoredText(10_000)).max(20).optional(),
    allow_fs_writes: z.array(StoredText(4096)).max(100).optional(),
    allow_fs_reads: z.array(StoredText(4096)).max(100).optional(),
    working_directory: StoredText(4096).optional(),
    enabled_mcp_servers: z.array(StoredText(64)).max(64).optional(),
  }),
});

/**
 * `session.gate_context` (queue `session-worker`): one session of the actor as the gate is asked
 * about a call of its root agent — its agent, source, security group, RunContext paths and whether
 * a Require is rejected unasked. The rules tester evaluates a named session with exactly these.
 */
export const GateContextRequest = z.object({ actor: Actor, session_id: Id });
export const GateRunContext = z.object({
  working_directory: StoredText(4096).nullable(),
  allow_fs_reads: z.array(StoredText(4096)),
  allow_fs_writes: z.array(StoredText(4096)),
});
export const GateContextReply = z.object({
  agent_id: z.string(),
  source: z.string(),
  security_group: z.string().nullable(),
  auto_deny: z.boolean(),
  run_context: GateRunContext,
});
export type GateContextReply = z.infer<typeof GateContextReply>;
