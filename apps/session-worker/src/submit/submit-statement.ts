import { leaseTake } from '../lease/lease.repository';
import {
  CHAT_HISTORY_INSERT,
  insertColumns,
  SESSION_EVENTS_INSERT,
  STACK_FRAMES_INSERT,
} from '../sessions/insert-columns.constants';
import { turnStartParts } from '../loop-adapters/session-store/turn-start';

// The submit's one statement (InboxRepository.submitToActive): the message stored, the session's
// lease taken, the turn's start read and, in the common case, the turn's first commit.

/**
 * The submit's one statement (see `InboxRepository.submitToActive`), prepared once per connection.
 */
export const SUBMIT_NAME = 'skald_submit_v6';

const START = turnStartParts({
  ses: 'ss',
  sid: '(SELECT id FROM ss)',
  carried: '$13::uuid[]',
  // The session as this statement leaves it: the role it records, and the turn it starts when it
  // enters the message (its own updates are not in its snapshot).
  sessionJson: `(SELECT (to_jsonb(ss) || jsonb_build_object('owner_role', $3::text)
      || COALESCE((SELECT jsonb_build_object('turn_state', 'running', 'turn_id', fc.id) FROM fc), '{}'::jsonb))::text
      FROM ss WHERE (SELECT work FROM w))`,
  // The queued inbox with the row this statement inserts if it stays queued (not in its snapshot either), in `ord` order.
  inbox: `(SELECT COALESCE(json_agg(i ORDER BY i.ord), '[]'::json) FROM (
      SELECT q.* FROM session_inbox q WHERE q.session_id = (SELECT id FROM ss) AND q.status = 'queued'
      UNION ALL SELECT * FROM ins WHERE ins.status = 'queued') i WHERE (SELECT work FROM w))::text`,
});

/**
 * `first`: whether this statement also makes the turn's first commit (see `submitToActive`). Each
 * condition rules out a rule of `runTurn`'s first commit the statement does not reproduce:
 * - `work`: the lease is taken here, was free in the snapshot and no holder wrote since (epoch + 1),
 *   and the turn is finished: nothing to recover, and the snapshot is the state the commit would see;
 * - a caller asks for it (`$14`, the root frame's id if one must be opened), not while draining
 *   and not for a synthetic message (not echoed: the loop enters it);
 * - not an `interrupt` (its stop follows the store) and no /stop recorded (the driver clears it first);
 * - nothing queued in the session: the new message is the item `nextTurnItem` picks, and the only one;
 * - no orphans: the root frame's last live row (status ok) is the model's, or there is none, so no
 *   row is marked failed. A chat message is stored with no rewind and no tool result.
 * And (CTE `slot`, judged only when all of these hold) one of the user's turn slots is free
 * (`SKALD_MAX_CONCURRENT_TURNS_PER_USER`, `$18`): else the message is stored queued — accepted,
 * acked — and starts when a turn of the user ends (turns/turn-slots.ts).
 */
const FIRST = `(SELECT work FROM w) AND $14::uuid IS NOT NULL AND $8::text <> 'interrupt'
     AND COALESCE((SELECT stop_requested_at IS NULL FROM ss), false)
     AND NOT EXISTS (SELECT 1 FROM session_inbox q WHERE q.session_id = (SELECT id FROM s) AND q.status = 'queued')
     AND NOT EXISTS (SELECT 1 FROM r, chat_history m
          WHERE m.frame_id = r.id AND m.status = 'ok' AND m.role <> 'assistant'
            AND m.ord > COALESCE((SELECT max(a.ord) FROM chat_history a
                                   WHERE a.frame_id = r.id AND a.status = 'ok' AND a.role = 'assistant'), -1))`;

/**
 * Sets the statement's cap on the user's queued inbox messages (`USER_CAPS.queued_messages`): the
 * row trigger on `session_inbox` (migration 1764460805400) counts them in `user_inbox_queued`,
 * exactly under concurrency, and refuses a `queued` insert past this cap with SQLSTATE `SK429`
 * (nothing the statement wrote is kept). Always true: a condition of the insert's SELECT, so it is
 * evaluated before the row is inserted.
 */
export const QUEUED_CAP = (param: string) => `set_config('skald.queued_cap', ${param}::int::text, true) IS NOT NULL`;

/** SQLSTATE of the inbox trigger's refusal (its detail: how many the user has queued). */
export const QUEUED_CAP_STATE = 'SK429';

export const SUBMIT_SQL = `WITH s AS (
   SELECT id FROM sessions WHERE user_id = $1::uuid AND source = $2::text AND is_active
 ), ${leaseTake({
   session: '(SELECT id FROM s)',
   owner: '$10::text',
   ttlMs: '$11::int',
   when: `$10::text IS NOT NULL AND EXISTS (SELECT 1 FROM s)
      AND NOT EXISTS (SELECT 1 FROM session_inbox d WHERE d.user_id = $1::uuid AND d.client_message_id = $5::text)
      AND NOT ((SELECT id FROM s) = ANY ($12::uuid[]))
      AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = (SELECT id FROM s)
                       AND l.owner IS NOT NULL AND l.expires_at > now())`,
 })},
 ss AS (
   SELECT s2.*, p.client AS user_pin FROM sessions s2
     LEFT JOIN llm_client_pins p ON p.user_id = s2.user_id AND p.source = s2.source
    WHERE s2.id = (SELECT id FROM s) AND s2.turn_state = 'finished' AND EXISTS (SELECT 1 FROM lease_taken)),
 w AS (SELECT EXISTS (SELECT 1 FROM lease_taken, ss
    WHERE lease_taken.took_over IS NOT TRUE
      AND lease_taken.epoch = COALESCE((SELECT l.epoch FROM session_leases l WHERE l.session_id = ss.id), 0) + 1) AS work),
 r AS (SELECT * FROM stack_frames WHERE session_id = (SELECT id FROM s) AND status = 'active' AND depth = 0
        ORDER BY ord LIMIT 1),
 pre AS (SELECT ${FIRST} AS ok),
 -- The per-user cap on running turns (migration 1764460805500): only when the statement would
 -- start the turn, the user's counter row is locked and judged in its latest version (a concurrent
 -- start committed after this snapshot is seen); no slot, and the message is stored queued, to
 -- start when a turn of the user ends (the trigger on sessions counts the turn this one starts).
 slot AS (
   INSERT INTO user_turns_running AS c (user_id, running) SELECT $1::uuid, 0 WHERE (SELECT ok FROM pre)
   ON CONFLICT (user_id) DO UPDATE SET running = c.running WHERE c.running < $18::int
   RETURNING 1),
 first AS (SELECT (SELECT ok FROM pre) AND EXISTS (SELECT 1 FROM slot) AS ok),
 ins AS (
   INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic,
                              status, settled_at)
   SELECT $4::uuid, s.id, $1::uuid, $5::text, $6::text, $7::jsonb, $8::text, $9::boolean,
          CASE WHEN (SELECT ok FROM first) THEN 'entered' ELSE 'queued' END,
          CASE WHEN (SELECT ok FROM first) THEN now() END
     -- Joined (not only read through \`first\`, which a plan may fold away) so that the lease row is
     -- always locked before the inbox row: one lock order for every submit, whatever its plan.
     FROM s LEFT JOIN lease_taken ON true
    -- The per-user cap on queued messages, for the inbox trigger that counts them (QUEUED_CAP).
    WHERE ${QUEUED_CAP('$17')}
   ON CONFLICT (user_id, client_message_id) DO NOTHING
   RETURNING *
 ),
 fc AS (SELECT ins.*, lease_taken.epoch AS lease_epoch FROM ins, lease_taken WHERE ins.status = 'entered'),
 root_opened AS (
   INSERT INTO stack_frames ${insertColumns(STACK_FRAMES_INSERT)}
   SELECT $14::uuid, fc.session_id, NULL, NULL, ss.agent_id, 0, 'active', NULL, fc.lease_epoch
     FROM fc, ss WHERE NOT EXISTS (SELECT 1 FROM r)
   RETURNING id),
 entered AS (
   INSERT INTO chat_history ${insertColumns(CHAT_HISTORY_INSERT)}
   SELECT fc.id, fc.session_id, COALESCE((SELECT id FROM r), $14::uuid), 'user', fc.content, NULL, fc.is_synthetic, 'ok',
          CASE WHEN fc.attachments IS NULL THEN NULL ELSE jsonb_build_object('attachments', fc.attachments) END,
          fc.client_message_id, NULL, NULL, fc.lease_epoch, $15::timestamptz, NULL, false, NULL, NULL
     FROM fc),
 head AS (
   UPDATE sessions SET owner_role = $3::text,
          last_seq = CASE WHEN fc.id IS NULL THEN sessions.last_seq ELSE sessions.last_seq + 1 END,
          turn_state = CASE WHEN fc.id IS NULL THEN sessions.turn_state ELSE 'running' END,
          turn_id = COALESCE(fc.id, sessions.turn_id),
          turn_seq = CASE WHEN fc.id IS NULL THEN sessions.turn_seq ELSE sessions.last_seq END,
          updated_at = CASE WHEN fc.id IS NULL THEN sessions.updated_at ELSE now() END
     FROM s LEFT JOIN fc ON true
    WHERE sessions.id = s.id AND (sessions.owner_role <> $3::text OR fc.id IS NOT NULL)
   RETURNING sessions.last_seq, fc.id IS NOT NULL AS first),
 echo AS (
   INSERT INTO session_events ${insertColumns(SESSION_EVENTS_INSERT)}
   SELECT fc.session_id, head.last_seq, 'user_message', $16::text FROM head, fc WHERE head.first),
 ${START.ctes}
 SELECT s.id AS active_id, (ins.id IS NOT NULL) AS inserted, lease_taken.epoch, lease_taken.took_over,
        prev.id AS prev_id, prev.session_id AS prev_session_id,
        prev.rewind_kind AS prev_rewind_kind, prev.rewind_message_id AS prev_rewind_message_id,
        (SELECT COALESCE((SELECT id FROM r), $14::uuid) FROM fc) AS first_frame_id,
        EXISTS (SELECT 1 FROM root_opened) AS first_frame_opened,
        (SELECT ss.agent_id FROM ss, fc) AS first_agent_id,
        (SELECT last_seq FROM head WHERE first) AS first_seq,
 ${START.columns}
   FROM s
   LEFT JOIN ins ON true
   LEFT JOIN lease_taken ON true
   LEFT JOIN session_inbox prev ON ins.id IS NULL AND prev.user_id = $1::uuid AND prev.client_message_id = $5::text`;
