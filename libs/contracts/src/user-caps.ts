import { z } from 'zod';
import type { ErrorBody } from './common';

/**
 * Per-user caps (fairness: one user cannot take the deployment's disk, connections or workers).
 * Each is enforced by the service that owns what it counts, atomically (under a per-user lock in
 * the same transaction as the insert, or an atomic counter), and answered with `rate_limited`
 * (REST 429, WS `error` frame) whose message names the cap, its variable and its value. One table:
 * the config schemas, the error sentence and docs/operations.md's reference are derived from it.
 */
export const USER_CAPS = {
  uploads: {
    env: 'SKALD_MAX_UPLOADS_PER_USER',
    default: 4,
    max: 1000,
    noun: 'uploads in progress',
    doc: 'Uploads one user may have in progress (staged, not yet stored) at once, across every tool runner.',
    hint: 'Wait for one to finish; an abandoned one is removed after SKALD_UPLOAD_STAGING_TTL_MS.',
  },
  staged_bytes: {
    env: 'SKALD_MAX_STAGED_BYTES_PER_USER',
    default: 256 * 1024 * 1024,
    max: 1024 ** 4,
    noun: 'bytes staged by uploads in progress',
    doc: 'Bytes one user may have staged by uploads in progress (they also count against the workspace quota).',
    hint: 'Wait for an upload to finish; an abandoned one is removed after SKALD_UPLOAD_STAGING_TTL_MS.',
  },
  cron_jobs: {
    env: 'SKALD_MAX_CRON_JOBS_PER_USER',
    default: 50,
    max: 100_000,
    noun: 'cron jobs',
    doc: 'Cron jobs one user may own (enabled or not; the system tick is not counted).',
    hint: 'Delete a cron job first.',
  },
  sessions: {
    env: 'SKALD_MAX_SESSIONS_PER_USER',
    default: 10_000,
    max: 10_000_000,
    noun: 'conversations',
    doc: 'Conversations one user may create from client surfaces (sessions of cron, tic and task runs are bounded by their jobs and not counted).',
    hint: 'Delete old conversations first.',
  },
  queued_messages: {
    env: 'SKALD_MAX_QUEUED_MESSAGES_PER_USER',
    default: 100,
    max: 100_000,
    noun: 'messages waiting in inboxes',
    doc: 'Messages one user may have queued (accepted, not yet entered a turn) across all their sessions; past it a new message is refused, never one already accepted.',
    hint: 'Wait for the running turns to take them, or /stop.',
  },
  concurrent_turns: {
    env: 'SKALD_MAX_CONCURRENT_TURNS_PER_USER',
    default: 4,
    max: 10_000,
    noun: 'turns running at once',
    doc: "Turns one user may have running at once across all their sessions (a turn parked for a human holds none; a resumed or recovered one is never held back). A message past it is accepted and waits in its inbox; it starts when one of the user's turns finishes or parks.",
    hint: 'Your message is queued and starts when one of your running turns ends.',
    /** Past it nothing is refused: the message waits (no 429). */
    waits: true,
  },
  sockets: {
    env: 'SKALD_MAX_SOCKETS_PER_USER',
    default: 32,
    max: 100_000,
    noun: 'open WebSocket connections',
    doc: 'WebSocket connections one user may hold open across every gateway replica (counted in Redis).',
    hint: 'Close another tab or client first.',
  },
} as const;

export type UserCapName = keyof typeof USER_CAPS;
/** The caps past which input waits instead of being refused (`waits: true`). */
export type WaitingCapName = {
  [K in UserCapName]: (typeof USER_CAPS)[K] extends { waits: true } ? K : never;
}[UserCapName];
export const WAITING_CAPS = (Object.keys(USER_CAPS) as UserCapName[]).filter(
  (k): k is WaitingCapName => 'waits' in USER_CAPS[k],
) as [WaitingCapName, ...WaitingCapName[]];

/** The config variable of a cap: a positive integer, with the table's default and documentation. */
export function userCapSetting(name: UserCapName) {
  const c = USER_CAPS[name];
  return z.coerce
    .number()
    .int()
    .min(1)
    .max(c.max)
    .default(c.default)
    .describe('waits' in c ? c.doc : `${c.doc} Past it: 429 / \`error\` \`rate_limited\` naming the cap.`);
}

/** The error a caller gets at a cap: `rate_limited`, naming the cap, its variable and its value. */
export function userCapReached(name: UserCapName, limit: number, have?: number): ErrorBody {
  const c = USER_CAPS[name];
  const now = have === undefined ? '' : ` (you have ${have})`;
  return {
    code: 'rate_limited',
    message: `per-user limit ${name} reached: at most ${limit} ${c.noun}${now}, set by ${c.env}. ${c.hint}`,
  };
}

/**
 * What a client is told while its input waits at a cap that waits (`turn_waiting`): the cap, its
 * value and its variable, and when the input goes on.
 */
export function userCapWaiting(name: WaitingCapName, limit: number): string {
  const c = USER_CAPS[name];
  return `Waiting to start: you have ${limit} ${c.noun}, your limit (per-user limit ${name}, set by ${c.env}). ${c.hint}`;
}
