import { pgParams } from '@skald/persistence/pg-text';
import { queryRows as rawQueryRows } from '@skald/persistence/query-rows';
import { InboxItem, LeaseLostError, SessionEventDraft } from '@skald/agent-loop';
import type { EntityManager } from 'typeorm';
import type { CommittedEvent } from './committed-event';
import { Fence, rejected } from './fence';
import { fenceAndEventParams } from './one-statement-commit';
import type { Read } from './row-reads';
import { inboxOf } from './session-rows';

/** What the event log's statements answer: the fence held, the session's head, the queued inbox (JSON text). */
type AppendRead = Read<{ epoch: number; fenced: number; last_seq: number; user_id: string; inbox: string }>;
import { QUEUED_INBOX_JSON } from './turn-start';
import { insertColumns, SESSION_EVENTS_INSERT } from '../../sessions/insert-columns.constants';

// The session's event log (`session_events`) as a commit of the transaction path writes it. The
// one-statement commit (one-statement-commit.ts) appends its events in its own statement, with the
// same seq rule; replays read the log through the sessions repository.

/**
 * The first statement of every commit: the fence — `FOR SHARE` on the lease row, so a take-over
 * waits for this commit or this commit sees it and writes nothing — and, with events, the next
 * contiguous seqs (`sessions.last_seq`) and the event rows, in one statement. Throws
 * `LeaseLostError` when the lease is not held under this epoch.
 */
export async function fenceAndAppend(
  tx: EntityManager,
  sessionId: string,
  fence: Fence,
  events: SessionEventDraft[],
): Promise<{ events: CommittedEvent[]; inbox: InboxItem[] }> {
  const lost = (): LeaseLostError => new LeaseLostError(`lease of session ${sessionId} lost (epoch ${fence.epoch})`);
  if (events.length === 0) {
    const lease = await rawQueryRows<AppendRead>(
      tx,
      `SELECT epoch, ${QUEUED_INBOX_JSON} AS inbox FROM session_leases
        WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR SHARE`,
      pgParams([sessionId, fence.owner, fence.epoch]),
    );
    if (lease.length === 0) throw lost();
    return { events: [], inbox: inboxOf(lease[0].inbox) };
  }
  let rows: AppendRead[];
  try {
    rows = await rawQueryRows<AppendRead>(
      tx,
      `WITH fence AS (
         SELECT epoch FROM session_leases
          WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR SHARE),
       head AS (
         UPDATE sessions SET last_seq = last_seq + $4, updated_at = now()
          WHERE id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING last_seq, user_id),
       appended AS (
         INSERT INTO session_events ${insertColumns(SESSION_EVENTS_INSERT)}
         SELECT $1, head.last_seq - $4 + u.n, u.t, u.p
           FROM head, unnest($5::text[], $6::text[]) WITH ORDINALITY AS u(t, p, n))
       SELECT (SELECT count(*) FROM fence)::int AS fenced, head.last_seq, head.user_id,
              CASE WHEN EXISTS (SELECT 1 FROM fence) THEN ${QUEUED_INBOX_JSON} END AS inbox
         FROM (SELECT 1) AS one LEFT JOIN head ON true`,
      pgParams(fenceAndEventParams(sessionId, fence, events)),
    );
  } catch (e) {
    throw rejected(e);
  }
  const head = rows[0];
  if (!head || Number(head.fenced) === 0) throw lost();
  if (head.last_seq === null || head.last_seq === undefined) throw new Error(`session ${sessionId} not found`);
  const first = Number(head.last_seq) - events.length + 1;
  return {
    events: events.map((event, i) => ({ userId: String(head.user_id), sessionId, seq: first + i, event })),
    inbox: inboxOf(head.inbox),
  };
}
