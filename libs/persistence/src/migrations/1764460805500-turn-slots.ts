import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The per-user cap on concurrent turns (`USER_CAPS.concurrent_turns`). A session holds a turn slot
 * (`sessions.holds_turn_slot`) while its turn is `running`, and from the moment a driver reserved
 * one for the turn it is about to start from the inbox until that turn starts (or the driver lets
 * it go). A BEFORE trigger on `sessions` keeps the flag tied to `turn_state`: a turn that becomes
 * `running` holds a slot (a resumed parked turn, a recovered one: never refused, counted), one that
 * leaves it (finished, parked: a parked turn waits for a human and holds nothing) frees it — in
 * the same statement, hence the same transaction, as the state change. An AFTER trigger keeps
 * `user_turns_running` (per user, sessions holding a slot) exact on every change of the flag and
 * on delete, so no writer has to remember it.
 *
 * The cap is judged where a turn may start, on the user's counter row locked and read in its
 * latest version (`ON CONFLICT … DO UPDATE … WHERE running < cap`): the submit's statement enters
 * a message only with a slot (else it stores it queued: accepted, never refused), and the driver
 * reserves one before it starts a turn from the inbox (else it leaves the session with its work,
 * for a doorbell or the sweep). Nothing here raises: a turn is never failed by the cap.
 */
export class TurnSlots1764460805500 implements MigrationInterface {
  name = 'TurnSlots1764460805500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN holds_turn_slot boolean NOT NULL DEFAULT false`);
    await q.query(`UPDATE sessions SET holds_turn_slot = true WHERE turn_state = 'running'`);
    await q.query(`
      CREATE TABLE user_turns_running (
        user_id uuid PRIMARY KEY,
        running integer NOT NULL CHECK (running >= 0)
      )`);
    await q.query(`
      INSERT INTO user_turns_running (user_id, running)
      SELECT user_id, count(*) FROM sessions WHERE holds_turn_slot GROUP BY user_id`);
    await q.query(`
      CREATE FUNCTION sessions_turn_slot_follow() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.holds_turn_slot := NEW.turn_state = 'running';
        RETURN NEW;
      END $$`);
    // Only when the state changes (a commit that bumps last_seq fires nothing): a slot reserved
    // for a turn not yet started stays reserved until the state moves.
    await q.query(`
      CREATE TRIGGER sessions_turn_slot_follow BEFORE UPDATE OF turn_state ON sessions
      FOR EACH ROW WHEN (OLD.turn_state IS DISTINCT FROM NEW.turn_state)
      EXECUTE FUNCTION sessions_turn_slot_follow()`);
    await q.query(`
      CREATE TRIGGER sessions_turn_slot_follow_insert BEFORE INSERT ON sessions
      FOR EACH ROW EXECUTE FUNCTION sessions_turn_slot_follow()`);
    await q.query(`
      CREATE FUNCTION sessions_turn_slot_count() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'INSERT' AND OLD.holds_turn_slot THEN
          UPDATE user_turns_running SET running = running - 1 WHERE user_id = OLD.user_id AND running > 0;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.holds_turn_slot THEN
          INSERT INTO user_turns_running AS c (user_id, running) VALUES (NEW.user_id, 1)
            ON CONFLICT (user_id) DO UPDATE SET running = c.running + 1;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER sessions_turn_slot_insert AFTER INSERT ON sessions
      FOR EACH ROW WHEN (NEW.holds_turn_slot) EXECUTE FUNCTION sessions_turn_slot_count()`);
    await q.query(`
      CREATE TRIGGER sessions_turn_slot_update AFTER UPDATE ON sessions
      FOR EACH ROW WHEN (OLD.holds_turn_slot IS DISTINCT FROM NEW.holds_turn_slot OR OLD.user_id IS DISTINCT FROM NEW.user_id)
      EXECUTE FUNCTION sessions_turn_slot_count()`);
    await q.query(`
      CREATE TRIGGER sessions_turn_slot_delete AFTER DELETE ON sessions
      FOR EACH ROW WHEN (OLD.holds_turn_slot) EXECUTE FUNCTION sessions_turn_slot_count()`);
    await q.query(`
      CREATE FUNCTION sessions_turn_slot_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM user_turns_running;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER sessions_turn_slot_truncate AFTER TRUNCATE ON sessions
      FOR EACH STATEMENT EXECUTE FUNCTION sessions_turn_slot_truncate()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS sessions_turn_slot_truncate ON sessions`);
    await q.query(`DROP FUNCTION IF EXISTS sessions_turn_slot_truncate()`);
    await q.query(`DROP TRIGGER IF EXISTS sessions_turn_slot_delete ON sessions`);
    await q.query(`DROP TRIGGER IF EXISTS sessions_turn_slot_update ON sessions`);
    await q.query(`DROP TRIGGER IF EXISTS sessions_turn_slot_insert ON sessions`);
    await q.query(`DROP FUNCTION IF EXISTS sessions_turn_slot_count()`);
    await q.query(`DROP TRIGGER IF EXISTS sessions_turn_slot_follow_insert ON sessions`);
    await q.query(`DROP TRIGGER IF EXISTS sessions_turn_slot_follow ON sessions`);
    await q.query(`DROP FUNCTION IF EXISTS sessions_turn_slot_follow()`);
    await q.query(`DROP TABLE IF EXISTS user_turns_running`);
    await q.query(`ALTER TABLE sessions DROP COLUMN IF EXISTS holds_turn_slot`);
  }
}
