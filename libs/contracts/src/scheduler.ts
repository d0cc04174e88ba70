import { z } from 'zod';
import { Actor, Id, StoredText, Timestamp } from './common';
import { RUN_CONTEXT_INPUT_FIELDS } from './run-context';

/**
 * Scheduler wire shapes: cron jobs and their runs (REST through the gateway), async
 * tasks (`execute_task` mode async from the session worker), and the two subjects the scheduler
 * asks of the session worker (start a job's ephemeral session, read how its turn ended).
 */

/** The RunContext a cron job's session runs under (same shape as the session RunContext). */
export const JobRunContext = z
  .object({
    security_group: StoredText(64).optional(),
    system_prompt: z.array(StoredText(10_000)).max(20).optional(),
    allow_fs_writes: z.array(StoredText(4096)).max(100).optional(),
    allow_fs_reads: z.array(StoredText(4096)).max(100).optional(),
    working_directory: StoredText(4096).optional(),
    /** MCP servers enabled for the run without `activate_tools` (checked against the owner's when set). */
    enabled_mcp_servers: z.array(StoredText(64)).max(64).optional(),
    /** Approvals inside a cron run are auto-denied unless this is true (nobody is there to answer). */
    allow_approvals: z.boolean().optional(),
  })
  .strict();
export type JobRunContext = z.infer<typeof JobRunContext>;

/** A cron job's RunContext as a caller sends it: validated and normalised as a session's is. */
export const JobRunContextInput = z
  .object({
    ...RUN_CONTEXT_INPUT_FIELDS,
    /** Approvals inside a cron run are auto-denied unless this is true (nobody is there to answer). */
    allow_approvals: z.boolean().optional(),
  })
  .strict();

/** `cron`: five fields, or six with seconds first. Validated (and the minimum interval checked) by the scheduler. */
export const CronJobInput = z
  .object({
    title: StoredText(200).min(1),
    prompt: StoredText(100_000).min(1),
    agent_id: StoredText(64).min(1).optional(),
    cron: StoredText(200).min(1),
    timezone: StoredText(64).min(1).optional(),
    enabled: z.boolean().optional(),
    run_context: JobRunContextInput.optional(),
  })
  .strict();
export type CronJobInput = z.infer<typeof CronJobInput>;
export const CronJobPatch = CronJobInput.partial().strict();
export type CronJobPatch = z.infer<typeof CronJobPatch>;

export const CronJobDto = z.object({
  id: Id,
  title: z.string(),
  prompt: z.string(),
  agent_id: z.string(),
  cron: z.string(),
  timezone: z.string(),
  enabled: z.boolean(),
  next_run_at: Timestamp.nullable(),
  last_run_at: Timestamp.nullable(),
  running_session_id: Id.optional(),
});
export type CronJobDto = z.infer<typeof CronJobDto>;
export const CronJobList = z.object({ items: z.array(CronJobDto) });

/** `refused`: the fire started nothing (its owner is disabled or deleted, …); `error` says why. */
export const JobRunStatus = z.enum(['running', 'succeeded', 'failed', 'cancelled', 'refused']);
export const JobRunDto = z.object({
  id: Id,
  job_id: Id,
  session_id: Id.nullable(),
  status: JobRunStatus,
  started_at: Timestamp,
  completed_at: Timestamp.nullable(),
  final_response: z.string().optional(),
  error: z.string().optional(),
});
export type JobRunDto = z.infer<typeof JobRunDto>;
export const JobRunList = z.object({ items: z.array(JobRunDto) });
export const RunNowReply = z.object({ run_id: Id });
export const KillReply = z.object({ killed: z.boolean() });

export const TaskDto = z.object({
  job_id: Id,
  title: z.string(),
  agent_id: z.string(),
  session_id: Id.nullable(),
  state: z.enum(['running', 'completed', 'failed', 'cancelled']),
  started_at: Timestamp,
  error: z.string().optional(),
});
export const TaskList = z.object({ items: z.array(TaskDto) });

// ---------------------------------------------------------------- NATS requests to the scheduler

export const CronListRequest = z.object({ actor: Actor });
export const CronCreateRequest = z.object({ actor: Actor, job: CronJobInput });
export const CronUpdateRequest = z.object({ actor: Actor, job_id: Id, patch: CronJobPatch });
export const CronJobRequest = z.object({ actor: Actor, job_id: Id });
export const CronRunsRequest = z.object({ actor: Actor, job_id: Id.optional() });
export const TasksListRequest = z.object({ actor: Actor, session_id: Id });
export const TicTriggerRequest = z.object({ actor: Actor });
export const JobCreated = z.object({ id: Id });
export const JobDone = z.object({ done: z.boolean() });

/** `execute_task` mode async: a durable job, idempotent by the spawning tool call id. */
export const SubmitAsyncRequest = z.object({
  actor: Actor,
  idempotency_key: z.string().min(1).max(200),
  parent_session_id: Id,
  parent_tool_call_id: z.string().min(1).max(200),
  source: z.string().min(1).max(32),
  scratchpad_session_id: Id,
  agent_id: z.string().min(1).max(64),
  prompt: z.string().min(1),
  title: z.string().nullable(),
  description: z.string().nullable(),
  client: z.string().nullable(),
});
export const SubmitAsyncReply = z.object({ job_id: Id, duplicate: z.boolean() });

// ---------------------------------------------------------------- NATS requests to the session worker

/**
 * Start a job's ephemeral session (idempotent: the run id is the session id) and put the prompt in
 * its inbox. A cron session auto-denies approvals unless its RunContext allows them.
 * A cron or tic session runs under `run_context`. An async task's session runs under its parent
 * conversation's policy as the worker reads it from the parent's row when it creates the session
 * (security group, working directory, pre-authorised paths); `run_context` is not used for it, and
 * without `parent_session_id`, or with a parent that no longer exists, the task is refused.
 */
export const JobSessionStartRequest = z.object({
  actor: Actor,
  run_id: Id,
  kind: z.enum(['cron', 'async', 'tic']),
  agent_id: z.string(),
  prompt: z.string(),
  run_context: JobRunContext,
  /** async: the conversation that started the task (its policy applies); absent or null otherwise. */
  parent_session_id: Id.nullable().optional(),
  scratchpad_session_id: Id.nullable(),
  client: z.string().nullable(),
});
export const JobSessionStartReply = z.object({ session_id: Id, created: z.boolean() });

/** How a job session's turn stands: `running` until its turn ended; then its ending, read from the session's own rows. */
export const JobSessionStatusRequest = z.object({ actor: Actor, session_id: Id });
export const JobSessionStatusReply = z.object({
  state: z.enum(['running', 'ended']),
  /** `final`: a final answer; `cancelled`: /stop or a kill; `failed`: exhausted, an LLM failure, anything else. */
  ending: z.enum(['final', 'cancelled', 'failed']).optional(),
  final_text: z.string().optional(),
  partial_output: z.string().optional(),
  error: z.string().optional(),
});
export type JobSessionStatusReply = z.infer<typeof JobSessionStatusReply>;

/**
 * Deliver a job's ending into a conversation as a synthetic assistant message with a completed
 * `task_completed` (async) or `read_notification` (cron, tic) call. Idempotent on `delivery_id`
 * (the run id). Enters at the next round boundary of a running turn, after the answer of a parked
 * one, or as a resumed turn of an idle session.
 */
export const JobDeliverRequest = z.object({
  actor: Actor,
  delivery_id: Id,
  /** async: the parent session; cron / tic: the active session of the home source. */
  session_id: Id.optional(),
  source: z.string().optional(),
  tool_name: z.enum(['task_completed', 'read_notification']),
  arguments: z.record(z.string(), z.unknown()),
  result: z.string(),
});
export const JobDeliverReply = z.object({ session_id: Id, duplicate: z.boolean() });

// ---------------------------------------------------------------- notifications (the truth of `notification` events)

/** `GET /api/cron/runs?job_id=`: one job's runs only. */
export const CronRunsQuery = z.object({ job_id: Id.optional() });
export const NotificationsQuery = z.object({
  before: Id.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export const NotificationDto = z.object({
  id: Id,
  summary: z.string(),
  refs: z.object({ job_id: Id.optional(), run_id: Id.optional(), session_id: Id.optional() }),
  created_at: Timestamp,
});
export type NotificationDto = z.infer<typeof NotificationDto>;
export const NotificationList = z.object({ items: z.array(NotificationDto), has_more: z.boolean() });
export type NotificationList = z.infer<typeof NotificationList>;
export const NotificationsListRequest = z.object({
  actor: Actor,
  before: Id.optional(),
  limit: z.number().int().min(1).max(200).default(50),
});
