import fc from 'fast-check';
import { computeVisible, isVisible } from './rule-engine';
import { RuleSet } from './rule-set';
import { ruleRow } from '../testing-fixtures/rule-row';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const r = ruleRow;

describe('tool visibility', () => {
  const set = new RuleSet([
    r(1, 'mcp__evil__*', 'deny'),
    r(2, 'write_file', 'deny', { pathPattern: '/workspace/secrets/*' }),
    r(3, 'execute_cmd', 'deny', { agentId: 'reader' }),
    r(4, 'restart', 'deny', { securityGroup: 'locked' }),
    r(5, '*', 'require'),
  ]);
  const ctx = { agentId: 'main', source: 'web' };

  it('hides a tool whose first applicable rule is an unconditional deny', () => {
    expect(isVisible(set, 'mcp__evil__x', ctx)).toBe(false);
    expect(isVisible(set, 'execute_cmd', { ...ctx, agentId: 'reader' })).toBe(false);
    expect(isVisible(set, 'restart', { ...ctx, securityGroup: 'locked' })).toBe(false);
  });
  it('keeps a tool whose first rule is conditional, or that is denied for others only', () => {
    expect(isVisible(set, 'write_file', ctx)).toBe(true);
    expect(isVisible(set, 'execute_cmd', ctx)).toBe(true);
    expect(isVisible(set, 'restart', ctx)).toBe(true);
    expect(isVisible(set, 'mcp__good__x', ctx)).toBe(true);
  });

  it('answers the same remembered as computed afresh, for any rules and any run of questions (seeded)', () => {
    console.log(`visibility memo: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    // names that could collide in a naively joined key: separators, empty strings, NUL
    const word = fc.constantFrom('', 'a', 'b', 'a|b', 'b|a', 'a:b', '1:a', 'x\u0000y', 'main', 'web', 'mcp__evil__x');
    const rule = fc.record({
      tool: fc.constantFrom('*', 'a', 'b', 'mcp__evil__*', 'execute_cmd', 'a*'),
      action: fc.constantFrom('allow', 'deny', 'require'),
      agentId: fc.option(word, { nil: null }),
      source: fc.option(word, { nil: null }),
      securityGroup: fc.option(word, { nil: null }),
      path: fc.option(fc.constant('/workspace/x/*'), { nil: null }),
    });
    const question = fc.record({
      tool: word,
      agentId: word,
      source: word,
      securityGroup: fc.option(word, { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 8 }), fc.array(question, { minLength: 1, maxLength: 60 }), (rows, qs) => {
        const stored = rows.map((x, i) =>
          r(i + 1, x.tool, x.action, {
            agentId: x.agentId,
            source: x.source,
            securityGroup: x.securityGroup,
            pathPattern: x.path,
          }),
        );
        const remembered = new RuleSet(stored);
        for (const q of [...qs, ...qs]) {
          const ctx = { agentId: q.agentId, source: q.source, securityGroup: q.securityGroup };
          expect(isVisible(remembered, q.tool, ctx)).toBe(isVisible(new RuleSet(stored), q.tool, ctx));
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('equals the uncached engine over rule sets that name agents, sources and groups or none of them (seeded)', () => {
    console.log(`visibility memo vs engine: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    const word = fc.constantFrom('', 'a', 'b', 'a|b', '1:a', 'main', 'web', 'execute_cmd', 'mcp__evil__x');
    // per set: whether its rules may name an agent, a source, a group at all (a set naming none is the common case)
    const ruleSet = fc.record({ agents: fc.boolean(), sources: fc.boolean(), groups: fc.boolean() }).chain((names) =>
      fc.array(
        fc.record({
          tool: fc.constantFrom('*', 'a', 'b', 'mcp__evil__*', 'execute_cmd', 'a*', 'main'),
          action: fc.constantFrom('allow', 'deny', 'require'),
          agentId: names.agents ? fc.option(word, { nil: null }) : fc.constant(null),
          source: names.sources ? fc.option(word, { nil: null }) : fc.constant(null),
          securityGroup: names.groups ? fc.option(word, { nil: null }) : fc.constant(null),
          path: fc.option(fc.constant('/workspace/x/*'), { nil: null }),
          command: fc.option(fc.constant('git status'), { nil: null }),
        }),
        { maxLength: 10 },
      ),
    );
    const question = fc.record({
      tool: word,
      agentId: word,
      source: word,
      securityGroup: fc.option(word, { nil: undefined }),
    });
    fc.assert(
      fc.property(ruleSet, fc.array(question, { minLength: 1, maxLength: 80 }), (rows, qs) => {
        const stored = rows.map((x, i) =>
          r(i + 1, x.tool, x.action, {
            agentId: x.agentId,
            source: x.source,
            securityGroup: x.securityGroup,
            pathPattern: x.path,
            commandPattern: x.command,
          }),
        );
        const remembered = new RuleSet(stored);
        const fresh = new RuleSet(stored);
        for (const q of [...qs, ...qs]) {
          const ctx = { agentId: q.agentId, source: q.source, securityGroup: q.securityGroup };
          expect(isVisible(remembered, q.tool, ctx)).toBe(computeVisible(fresh, q.tool, ctx));
        }
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('remembers one answer per tool for every agent and source when no rule names either', () => {
    const plain = new RuleSet([r(1, 'mcp__evil__*', 'deny'), r(2, '*', 'require')]);
    for (const agentId of ['main', 'coder', 'reader'])
      for (const source of ['web', 'cli'])
        for (const tool of ['read_file', 'mcp__evil__x']) isVisible(plain, tool, { agentId, source });
    expect(plain.visibleMemoSize).toBe(2);
    // a set naming an agent keeps agents apart, and still not sources
    const named = new RuleSet([r(1, 'execute_cmd', 'deny', { agentId: 'reader' }), r(2, '*', 'require')]);
    for (const agentId of ['main', 'reader'])
      for (const source of ['web', 'cli']) isVisible(named, 'execute_cmd', { agentId, source });
    expect(named.visibleMemoSize).toBe(2);
    expect(isVisible(named, 'execute_cmd', { agentId: 'reader', source: 'web' })).toBe(false);
    expect(isVisible(named, 'execute_cmd', { agentId: 'main', source: 'web' })).toBe(true);
  });

  it('keeps questions apart whose parts join to the same text', () => {
    const set = new RuleSet([r(1, 'x', 'deny', { agentId: 'a|b', source: 'a' }), r(2, '*', 'require')]);
    expect(isVisible(set, 'x', { agentId: 'a|b', source: 'a' })).toBe(false);
    expect(isVisible(set, 'x', { agentId: 'a', source: 'b|a' })).toBe(true);
    expect(isVisible(set, 'x', { agentId: 'a|b', source: 'a', securityGroup: '' })).toBe(false);
  });
});
