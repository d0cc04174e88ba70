import { MigrationInterface, QueryRunner } from 'typeorm';
import { fromJsonText, toJsonText } from '../pg-text';

/** The path a command's `pending_write` carried before `kind` said what it asks to approve. */
const COMMAND_PATH = '$ execute_cmd';
const PAGE = 500;

interface StoredEvent {
  session_id: string;
  seq: string;
  payload: string;
}

/** Every stored `pending_write` through `change` (a new payload, or null to keep it), in pages. */
async function rewrite(q: QueryRunner, change: (payload: Record<string, unknown>) => object | null): Promise<void> {
  let after = { session_id: '00000000-0000-0000-0000-000000000000', seq: '0' };
  for (;;) {
    const rows = (await q.query(
      `SELECT session_id, seq::text AS seq, payload FROM session_events
        WHERE type = 'pending_write' AND (session_id, seq) > ($1::uuid, $2::bigint)
        ORDER BY session_id, seq LIMIT ${PAGE}`,
      [after.session_id, after.seq],
    )) as StoredEvent[];
    const changed: Array<{ session_id: string; seq: string; payload: string }> = [];
    for (const r of rows) {
      const next = change(fromJsonText<Record<string, unknown>>(r.payload));
      if (next) changed.push({ session_id: r.session_id, seq: r.seq, payload: toJsonText(next) });
    }
    if (changed.length > 0)
      await q.query(
        `UPDATE session_events e SET payload = c.payload
           FROM unnest($1::uuid[], $2::bigint[], $3::text[]) AS c(session_id, seq, payload)
          WHERE e.session_id = c.session_id AND e.seq = c.seq`,
        [changed.map((c) => c.session_id), changed.map((c) => c.seq), changed.map((c) => c.payload)],
      );
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1]!;
  }
}

/**
 * A stored `pending_write` says what it asks to approve by its `kind` alone: one stored before
 * `kind` existed gets it from what it is — `command` when its path is the one a command's card
 * carried (the path then goes: a command has none), `file` otherwise. Events stored since carry
 * `kind` already and are left as they are.
 */
export class PendingWriteKind1764460805700 implements MigrationInterface {
  name = 'PendingWriteKind1764460805700';

  async up(q: QueryRunner): Promise<void> {
    await rewrite(q, (p) => {
      if (p.kind !== undefined) return p.kind === 'command' && p.path === COMMAND_PATH ? withoutPath(p) : null;
      return p.path === COMMAND_PATH ? { ...withoutPath(p), kind: 'command' } : { ...p, kind: 'file' };
    });
  }

  async down(q: QueryRunner): Promise<void> {
    await rewrite(q, (p) => (p.kind === 'command' && p.path === undefined ? { ...p, path: COMMAND_PATH } : null));
  }
}

function withoutPath(p: Record<string, unknown>): Record<string, unknown> {
  const { path: _path, ...rest } = p;
  return rest;
}
