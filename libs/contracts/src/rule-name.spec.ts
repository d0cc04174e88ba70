import fc from 'fast-check';
import { ApprovalRuleInput, ApprovalRulePatch, RULE_NAME_MAX, RuleName, ruleName } from './approvals';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 38;

/** A control character, a line or paragraph separator: what a one-line name cannot hold. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;
/** What `RuleName` is meant to accept, written independently of it: the trimmed text, or why not. */
function expected(raw: string): { ok: true; name: string } | { ok: false } {
  if (raw.includes('\0') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(raw))
    return { ok: false };
  // the raw bound, before trimming (zod measures a string in code points)
  if ([...raw].length > RULE_NAME_MAX * 2) return { ok: false };
  const name = raw.trim();
  if (name.length === 0 || [...name].length > RULE_NAME_MAX || CONTROL.test(name)) return { ok: false };
  return { ok: true, name };
}

const hostileUnit = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.constantFrom(
    ' ',
    '\t',
    '\n',
    '\r\n',
    '\u00a0',
    '\u3000',
    '\u2028',
    '\u2029',
    '\u0007',
    '\u007f',
    '\u0085',
    '\0',
    '\uD800',
    '\uDFFF',
    '\uD83D\uDE00',
    '\u202E',
    '\u200B',
    'e\u0301',
    '“',
    '<script>',
  ),
);
const hostileName = fc.oneof(
  fc.array(hostileUnit, { maxLength: 12 }).map((p) => p.join('')),
  // around the bound: long runs of one- and two-unit characters, padded with whitespace
  fc
    .tuple(fc.constantFrom('a', '\uD83D\uDE00', 'é'), fc.integer({ min: RULE_NAME_MAX - 2, max: RULE_NAME_MAX + 2 }))
    .chain(([c, n]) =>
      fc
        .tuple(fc.constantFrom('', ' ', '\t', '   '), fc.constantFrom('', ' ', '\n'))
        .map(([a, b]) => a + c.repeat(n) + b),
    ),
  fc.constantFrom(' '.repeat(200), '\t \n', '', 'a'.repeat(161)),
);
const base = { tool_pattern: 'write_file', action: 'require' as const, priority: 10 };

describe('a rule name at the create and update boundary', () => {
  it('is accepted trimmed, one line, 1 to RULE_NAME_MAX characters; anything else is refused naming `name`', () => {
    fc.assert(
      fc.property(hostileName, (raw) => {
        const want = expected(raw);
        for (const r of [
          ApprovalRuleInput.safeParse({ ...base, name: raw }),
          ApprovalRulePatch.safeParse({ name: raw }),
        ]) {
          expect(r.success).toBe(want.ok);
          if (r.success && want.ok) expect(r.data.name).toBe(want.name);
          if (!r.success) expect(r.error.issues[0]?.path).toEqual(['name']);
        }
      }),
      { seed, numRuns: 5000 },
    );
  });

  it('is optional on create, never null, and a whitespace-only or overlong one is refused', () => {
    expect(ApprovalRuleInput.safeParse(base).success).toBe(true);
    expect(ApprovalRuleInput.safeParse({ ...base, name: null }).success).toBe(false);
    expect(ApprovalRulePatch.safeParse({ name: null }).success).toBe(false);
    expect(RuleName.safeParse(' \u3000\t ').success).toBe(false);
    expect(RuleName.safeParse('x'.repeat(RULE_NAME_MAX + 1)).success).toBe(false);
    expect(RuleName.safeParse('\uD83D\uDE00'.repeat(RULE_NAME_MAX)).success).toBe(true);
    expect(RuleName.parse('  touching files needs a human  ')).toBe('touching files needs a human');
  });

  it('the default name (`ruleName`) of any rule is itself a valid name', () => {
    const text = fc.array(hostileUnit, { maxLength: 40 }).map((p) => p.join('').replaceAll('\0', ''));
    fc.assert(
      fc.property(
        fc.record({
          action: fc.constantFrom('allow', 'deny', 'require'),
          tool_pattern: text.filter((t) => t.trim().length > 0),
          path_pattern: fc.option(text),
          command_pattern: fc.option(text),
          note: fc.option(text),
        }),
        (r) => {
          const fixed = Object.fromEntries(
            Object.entries(r).map(([k, v]) => [k, typeof v === 'string' ? v.replace(/[\uD800-\uDFFF]/g, 'x') : v]),
          ) as typeof r;
          const name = ruleName(fixed);
          expect(RuleName.safeParse(name)).toEqual({ success: true, data: name });
        },
      ),
      { seed, numRuns: 3000 },
    );
  });
});
