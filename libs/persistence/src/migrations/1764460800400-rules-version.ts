import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approval service: a version number that every change of `approval_rules` bumps (a statement
 * trigger, so an operator's SQL counts too). Replicas poll this one row to learn that their cached
 * rule set is stale instead of reading and compiling every rule again.
 */
export class RulesVersion1764460800400 implements MigrationInterface {
  name = 'RulesVersion1764460800400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE approval_rules_version (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        version bigint NOT NULL
      )`);
    await q.query(`INSERT INTO approval_rules_version (id, version) VALUES (true, 1)`);
    await q.query(`
      CREATE FUNCTION approval_rules_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE approval_rules_version SET version = version + 1;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER approval_rules_version_bump
      AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON approval_rules
      FOR EACH STATEMENT EXECUTE FUNCTION approval_rules_bump_version()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS approval_rules_version_bump ON approval_rules`);
    await q.query(`DROP FUNCTION IF EXISTS approval_rules_bump_version()`);
    await q.query(`DROP TABLE IF EXISTS approval_rules_version`);
  }
}
