import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The per-user cap on queued inbox messages (`USER_CAPS.queued_messages`): `user_inbox_queued`
 * holds, per user, how many of their `session_inbox` rows are `queued`. A row trigger keeps it
 * exact on every transition — an insert as `queued`, any update of `status` out of or into
 * `queued` (entered, discarded, …), a delete (a conversation's cascade) — so no writer has to
 * remember it. The insert's increment is one conditional upsert on the user's row (`queued < cap`,
 * judged on the row's latest version under its lock), hence exact under concurrency though the
 * submit's statement reads an older snapshot; an insert that conflicts (`ON CONFLICT DO NOTHING`,
 * an idempotent re-submit) fires no AFTER INSERT trigger and is not counted.
 *
 * The cap is the statement's (`set_config('skald.queued_cap', …, true)`, the session worker's
 * `SKALD_MAX_QUEUED_MESSAGES_PER_USER`): a statement that sets it is refused past it with SQLSTATE
 * `SK429` (the detail: how many are queued), writing nothing; one that does not (a job's prompt, a task's result) is counted and never
 * refused — refusing it would lose what a job produced, and jobs have caps of their own.
 */
export class InboxQueuedCap1764460805400 implements MigrationInterface {
  name = 'InboxQueuedCap1764460805400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE user_inbox_queued (
        user_id uuid PRIMARY KEY,
        queued integer NOT NULL CHECK (queued >= 0)
      )`);
    await q.query(`
      INSERT INTO user_inbox_queued (user_id, queued)
      SELECT user_id, count(*) FROM session_inbox WHERE status = 'queued' GROUP BY user_id`);
    await q.query(`
      CREATE FUNCTION session_inbox_count_queued() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        cap integer;
        n integer;
      BEGIN
        IF TG_OP <> 'INSERT' AND OLD.status = 'queued' THEN
          UPDATE user_inbox_queued SET queued = queued - 1 WHERE user_id = OLD.user_id AND queued > 0;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.status = 'queued' THEN
          cap := nullif(current_setting('skald.queued_cap', true), '')::integer;
          INSERT INTO user_inbox_queued AS c (user_id, queued) VALUES (NEW.user_id, 1)
            ON CONFLICT (user_id) DO UPDATE SET queued = c.queued + 1
             WHERE cap IS NULL OR TG_OP <> 'INSERT' OR c.queued < cap
            RETURNING c.queued INTO n;
          IF n IS NULL THEN
            SELECT c.queued INTO n FROM user_inbox_queued c WHERE c.user_id = NEW.user_id;
            RAISE EXCEPTION 'per-user limit queued_messages reached' USING ERRCODE = 'SK429', DETAIL = n::text;
          END IF;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER session_inbox_queued_insert AFTER INSERT ON session_inbox
      FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION session_inbox_count_queued()`);
    await q.query(`
      CREATE TRIGGER session_inbox_queued_update AFTER UPDATE OF status ON session_inbox
      FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND (OLD.status = 'queued' OR NEW.status = 'queued'))
      EXECUTE FUNCTION session_inbox_count_queued()`);
    await q.query(`
      CREATE TRIGGER session_inbox_queued_delete AFTER DELETE ON session_inbox
      FOR EACH ROW WHEN (OLD.status = 'queued') EXECUTE FUNCTION session_inbox_count_queued()`);
    // A TRUNCATE fires no row trigger (and only the migration admin may run one): the counts go with it.
    await q.query(`
      CREATE FUNCTION session_inbox_truncate_queued() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM user_inbox_queued;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER session_inbox_queued_truncate AFTER TRUNCATE ON session_inbox
      FOR EACH STATEMENT EXECUTE FUNCTION session_inbox_truncate_queued()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS session_inbox_queued_truncate ON session_inbox`);
    await q.query(`DROP FUNCTION IF EXISTS session_inbox_truncate_queued()`);
    await q.query(`DROP TRIGGER IF EXISTS session_inbox_queued_delete ON session_inbox`);
    await q.query(`DROP TRIGGER IF EXISTS session_inbox_queued_update ON session_inbox`);
    await q.query(`DROP TRIGGER IF EXISTS session_inbox_queued_insert ON session_inbox`);
    await q.query(`DROP FUNCTION IF EXISTS session_inbox_count_queued()`);
    await q.query(`DROP TABLE IF EXISTS user_inbox_queued`);
  }
}
