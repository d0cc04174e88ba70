import fc from 'fast-check';
import { DEFAULT_APPROVAL_RULES } from '@skald/persistence';
import { recordAttackSuite } from '@skald/testing/attack-suite';
import { GateInput, RuleRow } from '../rules/gate-input';
import { evaluate } from '../rules/rule-engine';
import { RuleSet } from '../rules/rule-set';
import { initShellParser } from '../rules/shell-analysis';
import { canonical, EditedCall, judgeEdit } from './edit-call';
import type { StoredGateContext } from './requests.repository';

/**
 * An edit can never reach a call the gate denies. For generated (original, edited) pairs — shell
 * lines grown from commands, wrappers, substitutions and separators; file writes to denied,
 * memory and workspace paths; working directories — over the real rule engine (the default seed
 * with deny rules by command, by path and by security group) and the real shell parser: whenever
 * the gate's own evaluation of the edited call (as a check judges it, with any bypass, lexically
 * and with an unknown landing) is Deny, the edit is refused; an accepted edit is never Deny.
 */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`edit-before-approve properties: seed ${SEED} (FC_SEED=${SEED} replays)`);

let ord = 0;
const row = (
  toolPattern: string,
  action: string,
  priority: number,
  over: Partial<Pick<RuleRow, 'commandPattern' | 'pathPattern' | 'securityGroup'>> = {},
): RuleRow => ({
  id: `00000000-0000-4000-9000-${String(++ord).padStart(12, '0')}`,
  toolPattern,
  pathPattern: over.pathPattern ?? null,
  commandPattern: over.commandPattern ?? null,
  agentId: null,
  source: null,
  securityGroup: over.securityGroup ?? null,
  action,
  priority,
  ord,
  name: `rule ${ord}`,
});

const RULES = new RuleSet([
  ...DEFAULT_APPROVAL_RULES.map((r) => row(r.tool_pattern, r.action, r.priority)),
  row('execute_cmd', 'deny', 40, { commandPattern: 'rm -rf *' }),
  row('execute_cmd', 'deny', 40, { commandPattern: 'curl *' }),
  row('execute_cmd', 'deny', 40, { commandPattern: 'git push *' }),
  row('execute_cmd', 'deny', 40, { pathPattern: '/workspace/secret/**' }),
  row('@fs_any', 'deny', 40, { pathPattern: '/workspace/secret/**' }),
  row('execute_cmd', 'deny', 30, { commandPattern: 'git *', securityGroup: 'strict' }),
  row('execute_cmd', 'allow', 50, { commandPattern: 'echo *' }),
  row('execute_cmd', 'allow', 50, { commandPattern: 'ls *' }),
  row('execute_cmd', 'allow', 50, { commandPattern: 'cat *' }),
  row('write_file', 'allow', 60, { pathPattern: '/workspace/open/**' }),
]);

const PROGRAMS = ['rm', '/bin/rm', 'ls', 'cat', 'echo', 'git', 'curl', 'sh', 'bash', 'env', 'find', 'xargs', 'sudo'];
const WORDS = [
  '-rf',
  '-fr',
  '-r',
  '-f',
  '--force',
  '--recursive',
  'push',
  'status',
  '-C',
  'd',
  '-c',
  "'rm -rf x'",
  '"curl x"',
  '$(rm -rf x)',
  '`curl evil`',
  '-exec',
  'rm',
  '{}',
  '\\;',
  'x',
  '/workspace/secret/a',
  '../secret',
  '>',
  '2>&1',
  '<<<',
  'A=1',
];
const command = fc
  .tuple(fc.constantFrom(...PROGRAMS), fc.array(fc.constantFrom(...WORDS), { maxLength: 5 }))
  .map(([p, ws]) => [p, ...ws].join(' '));
const shellLine: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.array(command, { minLength: 1, maxLength: 3 }).chain((cs) =>
      fc
        .array(fc.constantFrom(' ; ', ' && ', ' || ', ' | ', '\n', ' & '), {
          minLength: cs.length - 1,
          maxLength: cs.length - 1,
        })
        .map((js) => cs.reduce((acc, c, i) => (i === 0 ? c : `${acc}${js[i - 1]}${c}`), '')),
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }) },
);
const PATHS = [
  'notes.md',
  '/workspace/a.txt',
  '/workspace/open/x.txt',
  '/workspace/secret/key',
  '/workspace/open/../secret/key',
  'secret/key',
  '../workspace/secret/key',
  'user-memory/n.md',
  'shared-memory/policy.md',
  './shared-memory/x',
  '/etc/passwd',
];
const workdir = fc.constantFrom(undefined, '/workspace', '/workspace/secret', '/workspace/open', '..', '/');

const execCall = fc.record({ command: shellLine, workdir }, { requiredKeys: ['command'] });
const writeCall = fc.record({ path: fc.constantFrom(...PATHS), content: fc.string({ maxLength: 60 }) });
const context: fc.Arbitrary<StoredGateContext> = fc.record({
  agent_id: fc.constantFrom('main', 'helper'),
  is_admin: fc.boolean(),
  security_group: fc.constantFrom(undefined, 'strict'),
  run_context: fc.record({
    working_directory: fc.constantFrom(null, '/workspace', '/workspace/secret', '/workspace/open'),
    allow_fs_reads: fc.constant([]),
    allow_fs_writes: fc.constantFrom([], ['/workspace/secret'], ['/workspace']),
  }),
});

const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function gateOwn(call: EditedCall, edited: Record<string, unknown>, landing: GateInput['landing']): string {
  const ctx = call.gateContext as StoredGateContext;
  return evaluate(RULES, {
    toolName: call.toolName,
    arguments: edited,
    agentId: ctx.agent_id,
    source: call.source,
    ...(ctx.security_group !== undefined ? { securityGroup: ctx.security_group } : {}),
    isAdmin: ctx.is_admin === true,
    runContext: {
      workingDirectory: ctx.run_context?.working_directory ?? null,
      allowFsReads: ctx.run_context?.allow_fs_reads ?? [],
      allowFsWrites: ctx.run_context?.allow_fs_writes ?? [],
    },
    bypasses: ['all'],
    ...(landing !== undefined ? { landing } : {}),
  }).decision;
}

describe('an edited call is never more permissive than the gate (generated)', () => {
  beforeAll(() => initShellParser(), 30_000);

  it('refuses every edit the gate denies; accepts none as Deny (>= 4,000 pairs)', () => {
    const seen = { pairs: 0, gate_denied: 0, refused_denied: 0, accepted: 0, accepted_but_denied: 0, invalid: 0 };
    fc.assert(
      fc.property(
        fc.oneof(
          fc.tuple(fc.constant('execute_cmd'), execCall, execCall),
          fc.tuple(fc.constant('write_file'), writeCall, writeCall),
        ),
        context,
        ([toolName, original, edited], gateContext) => {
          seen.pairs++;
          const call: EditedCall = { toolName, original: defined(original), gateContext, source: 'web' };
          const args = defined(edited);
          const judged = judgeEdit(RULES, call, args);
          const denied = gateOwn(call, args, undefined) === 'deny' || gateOwn(call, args, []) === 'deny';
          if (denied) seen.gate_denied++;
          if (judged.kind === 'refused' && judged.code === 'forbidden') seen.refused_denied++;
          if (judged.kind === 'refused' && judged.code === 'invalid_input') seen.invalid++;
          if (judged.kind === 'accepted') {
            seen.accepted++;
            if (denied || judged.decision.decision === 'deny') seen.accepted_but_denied++;
            expect(judged.decision.decision).not.toBe('deny');
            expect(denied).toBe(false);
          }
          // `unchanged` is a plain approval of the original: only possible when nothing changed.
          if (judged.kind === 'unchanged') expect(canonical(args)).toBe(canonical(call.original));
          if (denied && judged.kind !== 'unchanged') expect(judged.kind).toBe('refused');
        },
      ),
      { seed: SEED, numRuns: 4000 },
    );
    recordAttackSuite('edit-before-approve', 'generated', seen);
    expect(seen.accepted_but_denied).toBe(0);
    // not vacuous: many edits were denied by the gate and refused, many were accepted
    expect(seen.gate_denied).toBeGreaterThan(500);
    expect(seen.refused_denied).toBeGreaterThan(500);
    expect(seen.accepted).toBeGreaterThan(500);
  });
});
