import type { JobRunContext } from '@skald/contracts';

/**
 * What a job session's row says about which rules apply to its calls: the security group (its
 * rules are evaluated before the org-wide ones) and the stored RunContext (the working directory,
 * against which paths are resolved before rules match them, the pre-authorised paths, and the MCP
 * servers enabled without `activate_tools`).
 */
export interface JobSessionPolicy {
  securityGroup: string | null;
  runContext: {
    working_directory?: string;
    system_prompt?: string[];
    allow_fs_reads?: string[];
    allow_fs_writes?: string[];
    enabled_mcp_servers?: string[];
  };
}

/** Where a job session's policy comes from: the job's own RunContext (cron, tic) or the parent conversation's row (async). */
export type JobPolicySource = { from: 'job'; runContext: JobRunContext } | { from: 'parent'; parentSessionId: string };

/** Why an async task whose parent conversation no longer exists does not run (the run's error, the task_update's). */
export const PARENT_GONE = 'the conversation that started this task was deleted, so the task did not run';

/** A cron or tic run: the job's RunContext, which an admin chose where it names a group (checked at every fire). */
export function policyOfJob(rc: JobRunContext): JobSessionPolicy {
  return {
    securityGroup: rc.security_group ?? null,
    runContext: {
      ...(rc.working_directory ? { working_directory: rc.working_directory } : {}),
      ...(rc.system_prompt ? { system_prompt: rc.system_prompt } : {}),
      ...(rc.allow_fs_reads ? { allow_fs_reads: rc.allow_fs_reads } : {}),
      ...(rc.allow_fs_writes ? { allow_fs_writes: rc.allow_fs_writes } : {}),
      ...(rc.enabled_mcp_servers?.length ? { enabled_mcp_servers: rc.enabled_mcp_servers } : {}),
    },
  };
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined;

/**
 * An async task: the parent conversation's row as it is now — the same group, working directory,
 * pre-authorised paths and enabled MCP servers, so delegating work never leaves the rules an admin put the
 * conversation under. The parent's prompt parts are its own agent's instructions (a sync sub-agent
 * does not get them either) and choose no rule: not inherited.
 */
export function inheritedPolicy(parent: { security_group: unknown; run_context: unknown }): JobSessionPolicy {
  const rc = (parent.run_context && typeof parent.run_context === 'object' ? parent.run_context : {}) as Record<
    string,
    unknown
  >;
  const reads = strings(rc.allow_fs_reads);
  const writes = strings(rc.allow_fs_writes);
  const mcp = strings(rc.enabled_mcp_servers);
  return {
    securityGroup:
      typeof parent.security_group === 'string' && parent.security_group !== '' ? parent.security_group : null,
    runContext: {
      ...(typeof rc.working_directory === 'string' && rc.working_directory !== ''
        ? { working_directory: rc.working_directory }
        : {}),
      ...(reads?.length ? { allow_fs_reads: reads } : {}),
      ...(writes?.length ? { allow_fs_writes: writes } : {}),
      ...(mcp?.length ? { enabled_mcp_servers: mcp } : {}),
    },
  };
}
