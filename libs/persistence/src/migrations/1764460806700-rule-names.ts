import { MigrationInterface, QueryRunner } from 'typeorm';

/** The whitespace trimmed from a name (what JavaScript's `trim` takes away, in the ASCII range and the common others). */
const WS = `E' \\t\\n\\x0b\\f\\r\\u00a0\\u1680\\u2000\\u2001\\u2002\\u2003\\u2004\\u2005\\u2006\\u2007\\u2008\\u2009\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff'`;
/** A control character, a line or paragraph separator (a name is one line). */
const CONTROL = `'[\\u0001-\\u001f\\u007f-\\u009f\\u2028\\u2029]'`;

/**
 * Approval service: every rule has a name (`approval_rules.name`), what the gate's reason, the
 * audit and the inbox call it: trimmed, 1 to 80 characters, not unique. A stored rule is named as
 * the console named it until now: its note's first line, or what it matches (`allow read_file on
 * src/*`), control characters as spaces, cut to 79 characters and `…` (contracts' `ruleName` at
 * the time of this migration, frozen here in SQL).
 */
export class RuleNames1764460806700 implements MigrationInterface {
  name = 'RuleNames1764460806700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_rules ADD COLUMN name text`);
    await q.query(`
      WITH one_line AS (
        SELECT id,
               COALESCE(
                 NULLIF(btrim(regexp_replace(split_part(COALESCE(note, ''), E'\\n', 1), ${CONTROL}, ' ', 'g'), ${WS}), ''),
                 btrim(regexp_replace(
                   action || ' ' || tool_pattern
                     || COALESCE(' \`' || NULLIF(command_pattern, '') || '\`', '')
                     || COALESCE(' on ' || NULLIF(path_pattern, ''), ''),
                   ${CONTROL}, ' ', 'g'), ${WS})
               ) AS name
          FROM approval_rules
      )
      UPDATE approval_rules r
         SET name = CASE WHEN char_length(o.name) > 80 THEN left(o.name, 79) || '…' ELSE o.name END
        FROM one_line o
       WHERE o.id = r.id`);
    await q.query(`ALTER TABLE approval_rules ALTER COLUMN name SET NOT NULL`);
    await q.query(
      `ALTER TABLE approval_rules ADD CONSTRAINT approval_rules_name_check
         CHECK (char_length(name) BETWEEN 1 AND 80 AND name = btrim(name))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_rules DROP COLUMN name`);
  }
}
