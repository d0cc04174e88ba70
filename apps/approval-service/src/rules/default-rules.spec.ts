/**
 * Each tool's default rule (its registry definition) is what the default approval seed decides
 * for a call of it inside the workspace, and each has a rule category: a tool added without a
 * matching seed rule, or without a category, fails here.
 */
import { BUILTIN_TOOLS, LOOP_TOOLS, toolCategory } from '@skald/contracts';
import { DEFAULT_APPROVAL_RULES } from '@skald/persistence/default-approval-rules';
import { evaluate } from './rule-engine';
import { GateInput, RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { initShellParser } from './shell-analysis';

const SEED = new RuleSet(
  DEFAULT_APPROVAL_RULES.map((r, i): RuleRow => ({
    id: r.id,
    toolPattern: r.tool_pattern,
    pathPattern: r.path_pattern ?? null,
    commandPattern: null,
    agentId: null,
    source: null,
    securityGroup: null,
    action: r.action,
    priority: r.priority,
    ord: i + 1,
    name: `rule ${i + 1}`,
  })),
);

/** A plain call of the tool inside the workspace: each required argument with a value of its type. */
function workspaceCall(parameters: Record<string, unknown>): Record<string, unknown> {
  const props = (parameters.properties ?? {}) as Record<string, { type?: string }>;
  const args: Record<string, unknown> = {};
  for (const name of (parameters.required ?? []) as string[]) {
    const type = props[name]?.type;
    args[name] =
      name === 'path'
        ? '/workspace/src/notes.txt'
        : name === 'command'
          ? 'make release'
          : type === 'integer'
            ? 1
            : type === 'boolean'
              ? false
              : 'x';
  }
  return args;
}

const decide = (toolName: string, args: Record<string, unknown>) => {
  const input: GateInput = { toolName, arguments: args, agentId: 'main', source: 'web', isAdmin: false };
  return evaluate(SEED, input).decision;
};

describe('default rules are derived from the tool registry', () => {
  beforeAll(() => initShellParser(), 30_000);

  it.each(BUILTIN_TOOLS.map((t) => [t.name, t] as const))('%s: the seed decides its default rule', (_n, t) => {
    expect(decide(t.name, workspaceCall(t.parameters))).toBe(t.defaultRule);
  });

  it.each(LOOP_TOOLS.map((t) => [t.name, t] as const))(
    '%s (the loop’s own): the seed decides its default rule',
    (_n, t) => {
      expect(decide(t.name, {})).toBe(t.defaultRule);
    },
  );

  it('every built-in and loop tool has a rule category', () => {
    for (const t of [...BUILTIN_TOOLS, ...LOOP_TOOLS]) {
      expect([t.name, toolCategory(t.name)]).toEqual([t.name, t.category]);
      expect(t.category).not.toBe('dynamic');
    }
  });

  it('writes to the user’s memory are allowed for every file-writing tool (the hard exception)', () => {
    for (const t of BUILTIN_TOOLS.filter((x) => x.writesFile)) {
      expect([t.name, decide(t.name, { ...workspaceCall(t.parameters), path: 'user-memory/todo.md' })]).toEqual([
        t.name,
        'allow',
      ]);
    }
  });
});
