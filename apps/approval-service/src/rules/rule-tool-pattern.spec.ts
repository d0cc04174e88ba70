import { ruleRow } from '../testing-fixtures/rule-row';
import { evaluate } from './rule-engine';
import { GateInput, RuleRow } from './gate-input';
import { RuleCompileError, RuleSet, validateRule } from './rule-set';

/** A rule's `tool_pattern` is the shared tool-pattern language of libs/contracts (tool-patterns.spec.ts). */

const row = (toolPattern: string, action: string, priority: number): RuleRow => ruleRow(priority, toolPattern, action);
const call = (toolName: string): GateInput => ({
  toolName,
  arguments: { path: 'notes.md', command: 'ls' },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});

describe('rule tool patterns', () => {
  it.each([
    ['@nope', 'unknown tool group @nope'],
    ['read file', 'invalid tool name read file'],
    ['mcp__x/*', 'invalid tool pattern mcp__x/*'],
  ])('%j is refused on write, naming tool_pattern and the accepted forms', (pattern, problem) => {
    let error: unknown;
    try {
      validateRule({
        toolPattern: pattern,
        pathPattern: null,
        commandPattern: null,
        agentId: null,
        source: null,
        securityGroup: null,
        action: 'allow',
        priority: 1,
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RuleCompileError);
    expect((error as RuleCompileError).field).toBe('tool_pattern');
    expect((error as RuleCompileError).message).toContain(problem);
    expect((error as RuleCompileError).message).toContain('a glob with * (mcp__github__*), or a group: @fs_read');
  });

  it('the groups of agent filters are rule groups too', () => {
    const rules = new RuleSet([
      row('@shell', 'deny', 1),
      row('@agents', 'require', 2),
      row('@read_only', 'allow', 3),
      row('*', 'require', 999),
    ]);
    const decisions = ['execute_cmd', 'execute_task', 'read_file', 'list_agents', 'write_file', 'mcp__gh__x'].map(
      (n) => evaluate(rules, call(n)).decision,
    );
    expect(decisions).toEqual(['deny', 'require', 'allow', 'allow', 'require', 'require']);
  });
});
