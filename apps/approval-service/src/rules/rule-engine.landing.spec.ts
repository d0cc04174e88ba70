import fc from 'fast-check';
import { bypassCovers } from './session-bypass';
import { decideByRules, evaluate } from './rule-engine';
import { GateInput, RuleAction, RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { initShellParser } from './shell-analysis';

beforeAll(() => initShellParser());

// Rules, the RunContext's pre-authorised paths and directory-scoped approvals judge
// the lexical path and where the tool runner resolves it to land; a deny on either denies, an allow
// needs both; an unknown landing allows nothing by path.

const rule = (ord: number, action: RuleAction, toolPattern: string, pathPattern: string | null): RuleRow => ({
  id: `00000000-0000-4000-8000-${String(ord).padStart(12, '0')}`,
  toolPattern,
  pathPattern,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  action,
  priority: 0,
  ord,
  name: `rule ${ord}`,
});

const write = (path: string, landing?: Array<string | null>, extra: Partial<GateInput> = {}): GateInput => ({
  toolName: 'write_file',
  arguments: { path, content: 'x' },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
  ...(landing !== undefined ? { landing } : {}),
  ...extra,
});

const HOOKS = '/workspace/proj/docs/assets/post-checkout';
const LANDS = '/workspace/.git/hooks/post-checkout';
const DENY_GIT = rule(1, 'deny', '@fs_write', '/workspace/.git/**');

describe('rule engine: lexical and landing paths', () => {
  it('the .git/hooks case: pre-authorised docs/, deny .git/** where it lands → deny', () => {
    const input = write(HOOKS, [LANDS], { runContext: { allowFsWrites: ['/workspace/proj/docs'] } });
    const d = evaluate(new RuleSet([DENY_GIT]), input);
    expect(d).toMatchObject({ decision: 'deny', ruleId: DENY_GIT.id });
    expect(d.reason).toContain(LANDS);
    // The old judgement, on the lexical path alone, allowed it.
    const lexicalOnly: GateInput = { ...input };
    delete lexicalOnly.landing;
    expect(evaluate(new RuleSet([DENY_GIT]), lexicalOnly)).toMatchObject({ decision: 'allow', by: 'run_context' });
  });

  it('a deny on the lexical path denies whatever the landing', () => {
    const rules = new RuleSet([DENY_GIT, rule(2, 'allow', '@fs_write', '/workspace/**')]);
    expect(decideByRules(rules, write('/workspace/.git/x', ['/workspace/ok/x'])).decision).toBe('deny');
  });

  it('an allow rule needs both paths: allowed where written, landing elsewhere → the next rule or a human', () => {
    const rules = new RuleSet([rule(1, 'allow', '@fs_write', '/workspace/proj/docs/**')]);
    expect(decideByRules(rules, write('/workspace/proj/docs/a', ['/workspace/proj/docs/a'])).decision).toBe('allow');
    expect(decideByRules(rules, write('/workspace/proj/docs/a', ['/workspace/etc/a'])).decision).toBe('require');
    // Unknown landing (runner down, or refused): not allowed by a path rule.
    expect(decideByRules(rules, write('/workspace/proj/docs/a', [null])).decision).toBe('require');
    expect(decideByRules(rules, write('/workspace/proj/docs/a', [])).decision).toBe('require');
  });

  it('an allow rule without a path does not depend on where the call lands', () => {
    const rules = new RuleSet([rule(1, 'allow', 'write_file', null)]);
    expect(decideByRules(rules, write('/workspace/a', [null])).decision).toBe('allow');
  });

  it('the RunContext fast path needs both paths under a pre-authorised root', () => {
    const rc = { runContext: { allowFsWrites: ['/workspace/proj/docs'] } };
    const rules = new RuleSet([]);
    expect(evaluate(rules, write('/workspace/proj/docs/a', ['/workspace/proj/docs/a'], rc)).by).toBe('run_context');
    expect(evaluate(rules, write('/workspace/proj/docs/a', ['/workspace/proj/x/a'], rc)).decision).toBe('require');
    expect(evaluate(rules, write('/workspace/proj/docs/a', [null], rc)).decision).toBe('require');
  });

  it('a directory-scoped session approval covers a call only when it is written and lands in that directory', () => {
    const scope = { tool: 'write_file', directory: '/workspace/proj/docs' };
    expect(bypassCovers(scope, write('/workspace/proj/docs/a', ['/workspace/proj/docs/a']))).toBe(true);
    expect(bypassCovers(scope, write('/workspace/proj/docs/a', ['/workspace/.git/hooks/a']))).toBe(false);
    expect(bypassCovers(scope, write('/workspace/proj/docs/a', [null]))).toBe(false);
  });

  it("execute_cmd's working directory is judged where it lands too", () => {
    const rules = new RuleSet([
      rule(1, 'deny', 'execute_cmd', '/workspace/.git/**'),
      rule(2, 'allow', 'execute_cmd', '/workspace/**'),
    ]);
    const cmd = (landing: Array<string | null>): GateInput => ({
      toolName: 'execute_cmd',
      arguments: { command: 'ls', workdir: '/workspace/proj/docs/assets' },
      agentId: 'main',
      source: 'web',
      isAdmin: false,
      landing,
    });
    expect(decideByRules(rules, cmd(['/workspace/proj/docs/assets'])).decision).toBe('allow');
    expect(decideByRules(rules, cmd(['/workspace/.git/hooks'])).decision).toBe('deny');
  });

  it('an MCP tool’s path is not the runner’s file: judged as written', () => {
    const rules = new RuleSet([rule(1, 'allow', 'mcp__fs__*', '/workspace/**')]);
    const input: GateInput = { ...write('/workspace/a', []), toolName: 'mcp__fs__write' };
    expect(decideByRules(rules, input).decision).toBe('allow');
  });

  it('generated: the decision on both paths is the more restrictive of the decisions on each (seeded)', () => {
    const seed = Number(process.env.FC_SEED ?? 34_004);

    console.log(`rule-engine.landing: FC_SEED=${seed}`);
    const dirs = ['/workspace/a', '/workspace/a/b', '/workspace/.git', '/workspace/.git/hooks', '/workspace/c'];
    const path = fc.tuple(fc.constantFrom(...dirs), fc.constantFrom('x', 'y')).map(([d, f]) => `${d}/${f}`);
    const ruleArb = fc.tuple(
      fc.constantFrom<RuleAction>('allow', 'deny', 'require'),
      fc.constantFrom('@fs_write', 'write_file', '*'),
      fc.option(fc.constantFrom(...dirs.map((d) => `${d}/**`), '/workspace/*/x'), { nil: null }),
    );
    const rank = { allow: 0, require: 1, deny: 2 };
    let cases = 0;
    fc.assert(
      fc.property(fc.array(ruleArb, { maxLength: 6 }), path, fc.option(path, { nil: null }), (rs, lexical, landing) => {
        const rules = new RuleSet(rs.map(([a, t, p], i) => rule(i + 1, a, t, p)));
        const both = decideByRules(rules, write(lexical, [landing])).decision;
        const alone = decideByRules(rules, write(lexical)).decision;
        // An unknown landing is judged as a path nothing matches: a path-less rule set's answer.
        const there = decideByRules(rules, write(landing ?? '/workspace/\u0000', landing === null ? [] : undefined));
        const want = rank[alone] >= rank[there.decision] ? alone : there.decision;
        cases++;
        expect(both).toBe(want);
      }),
      { seed, numRuns: 1_000 },
    );
    expect(cases).toBe(1_000);
  });
});
