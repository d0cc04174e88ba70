import fc from 'fast-check';
import { recordAttackSuite } from '@skald/testing';
import { bypassCovers, narrowScopes } from './session-bypass';
import { GateInput } from './gate-input';
import { catalogueRisk, READ_ONLY_CATALOGUE } from './read-only-catalogue';
import { PROGRAM_SPECS } from './programs';
import { initShellParser } from './shell-analysis';

/**
 * For every program of the read-only catalogue, generated approved
 * invocations and generated later lines (the table's own options, the options the catalogue
 * names, random option-looking words, `--x=v`, clusters, values): a later line the catalogue says
 * writes or runs code is never covered by any narrow approval derived from an approved call.
 */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`narrow approval properties: seed ${SEED} (FC_SEED=${SEED} replays)`);

const PROGRAMS = [...new Set(READ_ONLY_CATALOGUE.flatMap((e) => e.programs))];

/** Option-looking words the catalogue names in its `when` column (`--pre`, `-delete`, `-i`, …). */
const CATALOGUE_WORDS = [
  ...new Set(
    READ_ONLY_CATALOGUE.flatMap((e) => [...e.when.matchAll(/`([^`]+)`/g)].map((m) => m[1]))
      .flatMap((w) => w.split(/[\s,]+/))
      .filter((w) => w.length > 0),
  ),
];
const SPEC_SHORT = [...new Set(PROGRAM_SPECS.flatMap((s) => [...(s.valuedShort ?? ''), ...(s.attachedShort ?? '')]))];
const SPEC_LONG = [...new Set(PROGRAM_SPECS.flatMap((s) => s.valuedLong ?? []))];

const value = fc.constantFrom(
  '1p',
  '1,3p',
  '1e touch PWNED',
  's/a/b/w out',
  's/a/b/',
  'BEGIN{system("id")}',
  '{print $1}',
  'exec=CMD',
  'sh',
  'x',
  '.',
  'a.tar',
  'host:a.tar',
  'k=v',
  'evil.mk',
  'of=out',
  '--version',
  'status',
  'push',
  'TODO',
);
const word: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...CATALOGUE_WORDS) },
  { weight: 2, arbitrary: fc.constantFrom(...SPEC_SHORT).map((c) => `-${c}`) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...SPEC_SHORT), value).map(([c, v]) => `-${c}${v}`) },
  { weight: 2, arbitrary: fc.constantFrom(...SPEC_LONG).map((l) => `--${l}`) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...SPEC_LONG), value).map(([l, v]) => `--${l}=${v}`) },
  { weight: 1, arbitrary: fc.stringMatching(/^-[a-zA-Z]{1,4}$/) },
  { weight: 1, arbitrary: fc.tuple(fc.stringMatching(/^--[a-z]{1,6}$/), value).map(([o, v]) => `${o}=${v}`) },
  { weight: 4, arbitrary: value },
);
const quote = (w: string) => `'${w.replace(/'/g, `'\\''`)}'`;
const line = (argv: readonly string[]) => [argv[0], ...argv.slice(1).map(quote)].join(' ');
const sh = (command: string): GateInput => ({
  toolName: 'execute_cmd',
  arguments: { command },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});

describe('narrow approvals never cover a line that writes or runs code (generated)', () => {
  beforeAll(() => initShellParser(), 30_000);

  it(`for every catalogue program (${PROGRAMS.length}), >= 5,000 generated lines`, () => {
    let checked = 0;
    let writing = 0;
    let coveredButWriting = 0;
    let covered = 0;
    let scopesSeen = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(...PROGRAMS),
        fc.array(word, { maxLength: 4 }),
        fc.array(word, { maxLength: 3 }),
        fc.nat(8),
        fc.boolean(),
        (program, approvedWords, extra, at, chained) => {
          const approved = [program, ...approvedWords];
          const scopes = narrowScopes('execute_cmd', { command: line(approved) }, null);
          scopesSeen += scopes.length;
          // later lines: the approved words with extra words inserted, and the extra words alone
          const pos = 1 + (at % approved.length);
          const laters = [[...approved.slice(0, pos), ...extra, ...approved.slice(pos)], [program, ...extra], approved];
          for (const later of laters) {
            const text = chained ? `${line(approved)} && ${line(later)}` : line(later);
            checked++;
            const risk = catalogueRisk(later);
            const any = scopes.some((s) => bypassCovers(s, sh(text)));
            if (any) covered++;
            if (risk === 'writes' || risk === 'runs') {
              writing++;
              if (any) coveredButWriting++;
            }
          }
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
    recordAttackSuite('narrow-approval', 'generated', {
      lines_checked: checked,
      writing_or_running: writing,
      covered,
      covered_but_writing: coveredButWriting,
    });
    expect(coveredButWriting).toBe(0);
    expect(checked).toBeGreaterThanOrEqual(5000);
    // not vacuous: approvals were offered, lines were covered, and many lines wrote or ran code
    expect(scopesSeen).toBeGreaterThan(100);
    expect(covered).toBeGreaterThan(100);
    expect(writing).toBeGreaterThan(1000);
  });
});
