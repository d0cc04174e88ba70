import type { Actor, JobRunContext, JobSessionStatusReply, UserPageReply, UserStandingReply } from '@skald/contracts';
import type { JobKind } from './job-rows';

/** What the scheduler asks of the session workers (NATS in production; swappable in tests). */
export interface JobSessionsPort {
  /** Idempotent: the run id is the session id. Throws `JobStartRefused` when the session cannot start. */
  start(r: {
    actor: Actor;
    runId: string;
    kind: JobKind;
    agentId: string;
    prompt: string;
    /** A cron or tic run's policy; not used for an async task, which runs under its parent's. */
    runContext: JobRunContext;
    /** async: the conversation that started the task, whose policy the worker reads at this start. */
    parentSessionId: string | null;
    scratchpadSessionId: string | null;
    client: string | null;
  }): Promise<{ sessionId: string }>;
  status(actor: Actor, sessionId: string): Promise<JobSessionStatusReply>;
  /** Idempotent on `deliveryId`. Throws `JobDeliveryTargetGone` when the named conversation does not exist. */
  deliver(r: {
    actor: Actor;
    deliveryId: string;
    sessionId?: string;
    source?: string;
    toolName: 'task_completed' | 'read_notification';
    arguments: Record<string, unknown>;
    result: string;
  }): Promise<void>;
  /** The same path as `/stop`. */
  cancel(actor: Actor, sessionId: string): Promise<void>;
}

/** Client events (user events on NATS): never the only copy of anything. */
export interface JobEventsPort {
  taskUpdate(
    userId: string,
    e: {
      job_id: string;
      title: string;
      agent_id: string;
      session_id?: string;
      state: 'running' | 'completed' | 'failed' | 'cancelled';
      error?: string;
      source: string;
    },
  ): void;
  notification(
    userId: string,
    e: { summary: string; refs: { job_id?: string; run_id?: string; session_id?: string }; source: string },
  ): void;
}

/** The worker refused to start the session (unknown agent, …): an ending, not a retry. */
export class JobStartRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobStartRefused';
  }
}

/** The conversation a delivery names does not exist (it was deleted): there is nowhere to deliver. */
export class JobDeliveryTargetGone extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobDeliveryTargetGone';
  }
}

/**
 * The user's home source (`/sethome`). The durable per-user home source is being added by another
 * engineer; until it lands every user's home is `web` (PROTOCOL.md: "`web` until `/sethome` names
 * another"). Replace this with the lookup when it exists.
 */
export interface HomeSourcePort {
  homeSource(userId: string): Promise<string>;
}

/**
 * The owner of a job as the gateway (owner of the users table) knows them now: asked at every
 * fire, so a job never runs for a disabled or deleted owner, and runs with the owner's current
 * role. Throws when it cannot be asked (the fire is retried, never started unchecked).
 */
export interface JobOwnersPort {
  standing(userId: string): Promise<UserStandingReply>;
}

/**
 * Whether a user has a WebSocket open on any gateway replica now (`user.presence`). Throws when no
 * gateway could say in time.
 */
export interface PresencePort {
  online(userId: string): Promise<boolean>;
}

/** The users as the gateway lists them (`user.page`): after `after` in id order, at most `limit`; `next` null at the end. */
export interface UserPagesPort {
  page(after: string | null, limit: number): Promise<UserPageReply>;
}

/** Durable notifications (webhooks, e-mail) of a job run's ending; idempotent on `eventKey`. */
export interface JobNotifyPort {
  jobFinished(e: {
    userId: string;
    eventKey: string;
    summary: string;
    refs: { job_id: string; run_id: string; session_id?: string };
  }): Promise<unknown>;
}
