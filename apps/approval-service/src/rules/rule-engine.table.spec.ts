import { DEFAULT_APPROVAL_RULES } from '@skald/persistence/default-approval-rules';
import { BypassScope, GateInput, RuleRow } from './gate-input';
import { evaluate } from './rule-engine';
import { RuleSet } from './rule-set';
import { initShellParser } from './shell-analysis';

/**
 * (rules, call) → decision, as data. `rules` names a rule set below; `call` is the tool name and
 * its arguments plus whatever differs from a plain user's web session of the `main` agent.
 */

type R = Partial<Omit<RuleRow, 'id' | 'ord'>> & { tool: string; action: string; id?: string };
let seq = 0;
const rule = (r: R): RuleRow => {
  seq += 1;
  return {
    id: r.id ?? `00000000-0000-4000-9000-${String(seq).padStart(12, '0')}`,
    toolPattern: r.tool,
    pathPattern: r.pathPattern ?? null,
    commandPattern: r.commandPattern ?? null,
    agentId: r.agentId ?? null,
    source: r.source ?? null,
    securityGroup: r.securityGroup ?? null,
    action: r.action,
    priority: r.priority ?? 100,
    ord: seq,
    name: `rule ${seq}`,
  };
};

const SEED: RuleRow[] = DEFAULT_APPROVAL_RULES.map((r, i) => ({
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
}));

const SHELL: RuleRow[] = [
  ...SEED,
  rule({ tool: 'execute_cmd', commandPattern: 'git status', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'git log *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'ls *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'cat *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'grep *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'echo *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'wc *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'find *', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'npm run test*', action: 'allow', priority: 50 }),
  rule({ tool: 'execute_cmd', commandPattern: 'rm -rf *', action: 'deny', priority: 40 }),
  rule({ tool: 'execute_cmd', commandPattern: 'sudo *', action: 'deny', priority: 40 }),
];

const PATTERNS: RuleRow[] = [
  rule({ tool: 'mcp__github__*', action: 'allow', priority: 10 }),
  rule({ tool: 'mcp__jira__delete_issue', action: 'deny', priority: 10 }),
  rule({ tool: 'mcp__jira__*', action: 'require', priority: 20 }),
  rule({ tool: '@fs_write', pathPattern: '/workspace/src/*', action: 'allow', priority: 30 }),
  rule({ tool: '@fs_write', pathPattern: '/workspace/*.md', action: 'allow', priority: 30 }),
  rule({ tool: '@fs_any', pathPattern: '/workspace/secrets/*', action: 'deny', priority: 5 }),
  rule({ tool: 'write_*', pathPattern: 'docs/*', action: 'allow', priority: 31 }),
  rule({ tool: 'execute_task', agentId: 'researcher', action: 'allow', priority: 30 }),
  rule({ tool: 'execute_cmd', source: 'cli', commandPattern: 'make *', action: 'allow', priority: 30 }),
  rule({ tool: 'restart', securityGroup: 'ops', action: 'allow', priority: 900 }),
  rule({ tool: 'restart', securityGroup: 'lab', action: 'deny', priority: 1 }),
  rule({ tool: 'web_fetch', securityGroup: 'ops', action: 'require', priority: 50 }),
  rule({ tool: 'web_fetch', action: 'allow', priority: 10 }),
  rule({ tool: 'danger_zone', action: 'deny', priority: 10 }),
  ...SEED,
];

const TIES: RuleRow[] = [
  rule({ tool: 'tie_tool', action: 'deny', priority: 7 }),
  rule({ tool: 'tie_tool', action: 'allow', priority: 7 }),
  rule({ tool: 'tie_tool2', action: 'allow', priority: 7 }),
  rule({ tool: 'tie_tool2', action: 'deny', priority: 7 }),
  rule({ tool: 'tie_tool3', action: 'deny', priority: 8 }),
  rule({ tool: 'tie_tool3', action: 'allow', priority: 2 }),
  ...SEED,
];

const BROKEN: RuleRow[] = [
  rule({ tool: '@fs_nonsense', action: 'allow', priority: 1 }),
  rule({ tool: 'web_search', commandPattern: 'echo "unterminated', action: 'allow', priority: 2 }),
  rule({ tool: 'web_search', action: 'allow', priority: 3 }),
  rule({ tool: 'calc', action: 'maybe', priority: 4 }),
  ...SEED,
];
const BROKEN_TOOL_ONLY: RuleRow[] = [
  rule({ tool: 'web_search', pathPattern: '/workspace/../etc/*', action: 'allow', priority: 2 }),
  rule({ tool: 'web_search', action: 'allow', priority: 3 }),
  rule({ tool: 'calc', action: 'allow', priority: 3 }),
  ...SEED,
];

/** Command rules with a path condition: it judges the directory the command runs in. */
const WORKDIR: RuleRow[] = [
  ...SEED,
  rule({
    tool: 'execute_cmd',
    commandPattern: 'make *',
    pathPattern: '/workspace/proj/**',
    action: 'allow',
    priority: 50,
  }),
  rule({
    tool: 'execute_cmd',
    commandPattern: 'rm *',
    pathPattern: '/workspace/prod/**',
    action: 'deny',
    priority: 40,
  }),
];

/** A directory no file write may touch: delete_file is a file write. */
const KEEP: RuleRow[] = [
  ...SEED,
  rule({ tool: '@fs_write', pathPattern: '/workspace/keep/**', action: 'deny', priority: 10 }),
];

const SETS = { SEED, SHELL, PATTERNS, TIES, BROKEN, BROKEN_TOOL_ONLY, WORKDIR, KEEP };

interface Case {
  name: string;
  rules: keyof typeof SETS;
  tool: string;
  args?: Record<string, unknown>;
  call?: Partial<Omit<GateInput, 'toolName' | 'arguments'>>;
  bypasses?: BypassScope[];
  expect: 'allow' | 'deny' | 'require';
  by?: 'rule' | 'bypass' | 'run_context' | 'auto_deny' | 'policy';
}

const sh = (command: string): Record<string, unknown> => ({ command });
const RC = (reads: string[], writes: string[], wd?: string) => ({
  runContext: { allowFsReads: reads, allowFsWrites: writes, workingDirectory: wd },
});

// prettier-ignore: one case a line reads as a table
// prettier-ignore
const CASES: Case[] = [
  // ---- default seed: default closed
  { name: 'read inside the workspace', rules: 'SEED', tool: 'read_file', args: { path: 'notes.txt' }, expect: 'allow' },
  { name: 'absolute read inside the workspace', rules: 'SEED', tool: 'read_file', args: { path: '/workspace/a/b.txt' }, expect: 'allow' },
  { name: 'absolute read outside the workspace', rules: 'SEED', tool: 'read_file', args: { path: '/etc/passwd' }, expect: 'require' },
  { name: '.. escaping the workspace', rules: 'SEED', tool: 'read_file', args: { path: '../../etc/passwd' }, expect: 'require' },
  { name: '.. staying inside the workspace', rules: 'SEED', tool: 'read_file', args: { path: 'a/../b.txt' }, expect: 'allow' },
  { name: 'absolute path with .. out of the workspace', rules: 'SEED', tool: 'grep_files', args: { path: '/workspace/../root', pattern: 'x' }, expect: 'require' },
  { name: 'list_files without path = working directory', rules: 'SEED', tool: 'list_files', expect: 'allow' },
  { name: 'read of user memory', rules: 'SEED', tool: 'read_file', args: { path: 'user-memory/notes.md' }, expect: 'allow' },
  { name: 'read of shared memory', rules: 'SEED', tool: 'read_file', args: { path: 'shared-memory/team.md' }, expect: 'allow' },
  { name: 'write to user memory (hard exception)', rules: 'SEED', tool: 'write_file', args: { path: 'user-memory/todo.md', content: 'x' }, expect: 'allow' },
  { name: './ prefixed memory path', rules: 'SEED', tool: 'append_file', args: { path: './user-memory/log.md', content: 'x' }, expect: 'allow' },
  { name: 'memory path climbing out with ..', rules: 'SEED', tool: 'write_file', args: { path: 'user-memory/../shared-memory/x.md', content: 'x' }, expect: 'require' },
  { name: 'memory path .. staying inside', rules: 'SEED', tool: 'write_file', args: { path: 'user-memory/a/../b.md', content: 'x' }, expect: 'allow' },
  { name: 'write in the workspace asks', rules: 'SEED', tool: 'write_file', args: { path: 'a.txt', content: 'x' }, expect: 'require' },
  { name: 'edit in the workspace asks', rules: 'SEED', tool: 'edit_file', args: { path: 'a.txt', old: 'a', new: 'b' }, expect: 'require' },
  { name: 'memory_search allowed', rules: 'SEED', tool: 'memory_search', args: { query: 'x' }, expect: 'allow' },
  { name: 'plumbing: update_scratchpad', rules: 'SEED', tool: 'update_scratchpad', args: { key: 'k', value: 'v' }, expect: 'allow' },
  { name: 'plumbing: write_todos', rules: 'SEED', tool: 'write_todos', args: { todos: [] }, expect: 'allow' },
  { name: 'plumbing: ask_user_clarification', rules: 'SEED', tool: 'ask_user_clarification', expect: 'allow' },
  { name: 'plumbing: activate_tools', rules: 'SEED', tool: 'activate_tools', expect: 'allow' },
  { name: 'plumbing: list_agents', rules: 'SEED', tool: 'list_agents', expect: 'allow' },
  { name: 'execute_cmd asks', rules: 'SEED', tool: 'execute_cmd', args: sh('ls'), expect: 'require' },
  { name: 'restart asks', rules: 'SEED', tool: 'restart', expect: 'require' },
  { name: 'execute_task asks', rules: 'SEED', tool: 'execute_task', args: { agent_id: 'x', prompt: 'p' }, expect: 'require' },
  { name: 'MCP tool asks', rules: 'SEED', tool: 'mcp__github__create_issue', expect: 'require' },
  { name: 'unknown tool asks (catch-all)', rules: 'SEED', tool: 'brand_new_tool', expect: 'require' },
  { name: 'working directory resolves relative paths', rules: 'SEED', tool: 'read_file', args: { path: 'x.txt' }, call: { runContext: { workingDirectory: '/workspace/proj' } }, expect: 'allow' },
  { name: 'working directory outside the workspace: the runner refuses, the gate asks', rules: 'SEED', tool: 'read_file', args: { path: 'passwd' }, call: { runContext: { workingDirectory: '/etc' } }, expect: 'require' },

  // ---- delete_file is a file write: @fs_write rules, the fast path and the memory rules judge it
  { name: 'delete in the workspace asks', rules: 'SEED', tool: 'delete_file', args: { path: 'a.txt' }, expect: 'require' },
  { name: '@fs_write deny covers delete_file', rules: 'KEEP', tool: 'delete_file', args: { path: 'keep/a.txt' }, expect: 'deny' },
  { name: '@fs_write deny covers a recursive delete of the directory', rules: 'KEEP', tool: 'delete_file', args: { path: '/workspace/keep/sub', recursive: true }, expect: 'deny' },
  { name: '@fs_write deny covers delete_file through ..', rules: 'KEEP', tool: 'delete_file', args: { path: 'other/../keep/a.txt' }, expect: 'deny' },
  { name: '@fs_write deny covers delete_file landing there through a symlinked directory', rules: 'KEEP', tool: 'delete_file', args: { path: 'alias/a.txt' }, call: { landing: ['/workspace/keep/a.txt'] }, expect: 'deny' },
  { name: 'delete outside the denied directory asks', rules: 'KEEP', tool: 'delete_file', args: { path: 'other/a.txt' }, call: { landing: ['/workspace/other/a.txt'] }, expect: 'require' },
  { name: 'fast path: pre-authorised delete', rules: 'SEED', tool: 'delete_file', args: { path: 'out/a.txt' }, call: RC([], ['/workspace/out']), expect: 'allow', by: 'run_context' },
  { name: 'fast path: read authorisation does not cover a delete', rules: 'SEED', tool: 'delete_file', args: { path: 'out/a.txt' }, call: RC(['/workspace/out'], []), expect: 'require' },
  { name: 'fast path: pre-authorised writes do not beat a deny', rules: 'KEEP', tool: 'delete_file', args: { path: 'keep/a.txt' }, call: RC([], ['/workspace']), expect: 'deny' },
  { name: 'non-admin delete in shared memory is denied', rules: 'SEED', tool: 'delete_file', args: { path: 'shared-memory/team.md' }, expect: 'deny', by: 'policy' },

  // ---- shared memory
  { name: 'non-admin write to shared memory is denied', rules: 'SEED', tool: 'write_file', args: { path: 'shared-memory/team.md', content: 'x' }, expect: 'deny', by: 'policy' },
  { name: 'non-admin append to shared memory is denied', rules: 'SEED', tool: 'append_file', args: { path: 'shared-memory/log.md', content: 'x' }, expect: 'deny', by: 'policy' },
  { name: 'shared-memory deny is not bypassed', rules: 'SEED', tool: 'edit_file', args: { path: 'shared-memory/a.md', old: 'a', new: 'b' }, bypasses: ['all'], expect: 'deny' },
  { name: 'admin write to shared memory asks', rules: 'SEED', tool: 'write_file', args: { path: 'shared-memory/team.md', content: 'x' }, call: { isAdmin: true }, expect: 'require' },
  { name: 'workspace dir named shared-memory is not memory', rules: 'SEED', tool: 'write_file', args: { path: '/workspace/shared-memory/x', content: 'x' }, expect: 'require' },

  // ---- pattern kinds
  { name: 'mcp__<server>__* allows that server', rules: 'PATTERNS', tool: 'mcp__github__create_issue', expect: 'allow' },
  { name: 'mcp__<server>__* does not cover another server', rules: 'PATTERNS', tool: 'mcp__gitlab__create_issue', expect: 'require' },
  { name: 'exact MCP tool deny before the server rule', rules: 'PATTERNS', tool: 'mcp__jira__delete_issue', expect: 'deny' },
  { name: 'MCP server require', rules: 'PATTERNS', tool: 'mcp__jira__get_issue', expect: 'require' },
  { name: '@fs_write + dir/* subtree', rules: 'PATTERNS', tool: 'edit_file', args: { path: 'src/deep/x.ts', old: 'a', new: 'b' }, expect: 'allow' },
  { name: 'dir/* includes the dir itself', rules: 'PATTERNS', tool: 'write_file', args: { path: '/workspace/src', content: '' }, expect: 'allow' },
  { name: 'dir/* is not a name prefix', rules: 'PATTERNS', tool: 'write_file', args: { path: 'srcfoo/x.ts', content: '' }, expect: 'require' },
  { name: '*.md glob within one segment', rules: 'PATTERNS', tool: 'write_file', args: { path: 'README.md', content: '' }, expect: 'allow' },
  { name: '*.md glob does not cross /', rules: 'PATTERNS', tool: 'write_file', args: { path: 'docsx/README.md', content: '' }, expect: 'require' },
  { name: 'relative path pattern anchors at /workspace', rules: 'PATTERNS', tool: 'write_file', args: { path: 'docs/guide/a.txt', content: '' }, expect: 'allow' },
  { name: 'prefix* tool pattern does not cover other tools', rules: 'PATTERNS', tool: 'edit_file', args: { path: 'docs/a.txt', old: 'a', new: 'b' }, expect: 'require' },
  { name: '@fs_any deny on a subtree (read)', rules: 'PATTERNS', tool: 'read_file', args: { path: 'secrets/key.pem' }, expect: 'deny' },
  { name: '@fs_any deny on a subtree (.. into it)', rules: 'PATTERNS', tool: 'read_file', args: { path: 'src/../secrets/key.pem' }, expect: 'deny' },
  { name: 'deny is not bypassed', rules: 'PATTERNS', tool: 'read_file', args: { path: 'secrets/key.pem' }, bypasses: ['all'], expect: 'deny' },
  { name: 'deny is not relaxed by the fast path', rules: 'PATTERNS', tool: 'read_file', args: { path: 'secrets/key.pem' }, call: RC(['/workspace'], []), expect: 'deny' },
  { name: 'agent_id condition matches', rules: 'PATTERNS', tool: 'execute_task', call: { agentId: 'researcher' }, expect: 'allow' },
  { name: 'agent_id condition does not match', rules: 'PATTERNS', tool: 'execute_task', call: { agentId: 'main' }, expect: 'require' },
  { name: 'source condition matches', rules: 'PATTERNS', tool: 'execute_cmd', args: sh('make test'), call: { source: 'cli' }, expect: 'allow' },
  { name: 'source condition does not match', rules: 'PATTERNS', tool: 'execute_cmd', args: sh('make test'), call: { source: 'web' }, expect: 'require' },
  { name: 'security group rule applies to its group', rules: 'PATTERNS', tool: 'restart', call: { securityGroup: 'ops' }, expect: 'allow' },
  { name: "session's group before the default (despite priority)", rules: 'PATTERNS', tool: 'web_fetch', call: { securityGroup: 'ops' }, expect: 'require' },
  { name: 'without a group the default rule applies', rules: 'PATTERNS', tool: 'web_fetch', expect: 'allow' },
  { name: "another group's rules never apply", rules: 'PATTERNS', tool: 'restart', call: { securityGroup: 'dev' }, expect: 'require' },
  { name: 'group deny', rules: 'PATTERNS', tool: 'restart', call: { securityGroup: 'lab' }, expect: 'deny' },
  { name: 'unconditional deny', rules: 'PATTERNS', tool: 'danger_zone', expect: 'deny' },

  // ---- priority ties: insertion order decides
  { name: 'tie: first inserted deny wins', rules: 'TIES', tool: 'tie_tool', expect: 'deny' },
  { name: 'tie: first inserted allow wins', rules: 'TIES', tool: 'tie_tool2', expect: 'allow' },
  { name: 'lower priority number wins over insertion', rules: 'TIES', tool: 'tie_tool3', expect: 'allow' },

  // ---- rules that fail to load
  { name: 'broken tool group means require for every tool', rules: 'BROKEN', tool: 'web_search', expect: 'require' },
  { name: 'broken rule is never an allow', rules: 'BROKEN', tool: 'read_file', args: { path: 'a.txt' }, expect: 'require' },
  { name: 'broken command pattern: its tool asks', rules: 'BROKEN_TOOL_ONLY', tool: 'web_search', expect: 'require' },
  { name: 'broken rule does not affect other tools', rules: 'BROKEN_TOOL_ONLY', tool: 'calc', expect: 'allow' },
  { name: 'unknown action means require', rules: 'BROKEN', tool: 'calc', expect: 'require' },

  // ---- bypasses
  { name: 'bypass all relaxes require', rules: 'SEED', tool: 'execute_cmd', args: sh('make'), bypasses: ['all'], expect: 'allow', by: 'bypass' },
  { name: 'bypass category shell', rules: 'SEED', tool: 'execute_cmd', args: sh('make'), bypasses: [{ category: 'shell' }], expect: 'allow', by: 'bypass' },
  { name: 'bypass category filesystem does not cover shell', rules: 'SEED', tool: 'execute_cmd', args: sh('make'), bypasses: [{ category: 'filesystem' }], expect: 'require' },
  { name: 'bypass category filesystem covers writes', rules: 'SEED', tool: 'write_file', args: { path: 'a', content: '' }, bypasses: [{ category: 'Filesystem' }], expect: 'allow' },
  { name: 'bypass mcp_server covers its tools', rules: 'SEED', tool: 'mcp__github__x', bypasses: [{ mcp_server: 'github' }], expect: 'allow' },
  { name: 'bypass mcp_server does not cover another server', rules: 'SEED', tool: 'mcp__gitlab__x', bypasses: [{ mcp_server: 'github' }], expect: 'require' },
  { name: 'bypass never allows an unparsable line', rules: 'SEED', tool: 'execute_cmd', args: sh('echo "x'), bypasses: ['all'], expect: 'require' },

  // ---- RunContext fast path
  { name: 'fast path: pre-authorised write', rules: 'SEED', tool: 'write_file', args: { path: 'out/a.txt', content: '' }, call: RC([], ['/workspace/out']), expect: 'allow', by: 'run_context' },
  { name: 'fast path: write outside the authorised dir', rules: 'SEED', tool: 'write_file', args: { path: 'other/a.txt', content: '' }, call: RC([], ['/workspace/out']), expect: 'require' },
  { name: 'fast path: read-only authorisation does not allow writes', rules: 'SEED', tool: 'write_file', args: { path: 'out/a.txt', content: '' }, call: RC(['/workspace/out'], []), expect: 'require' },
  { name: 'fast path: a path outside the workspace is never pre-authorised (the runner refuses it)', rules: 'SEED', tool: 'read_file', args: { path: '/data/x.csv' }, call: RC(['/data'], []), expect: 'require' },
  { name: 'fast path: relative entry anchors at /workspace', rules: 'SEED', tool: 'write_file', args: { path: 'out/a.txt', content: '' }, call: RC([], ['out']), expect: 'allow' },
  { name: 'fast path: .. out of an authorised dir', rules: 'SEED', tool: 'write_file', args: { path: 'out/../../etc/x', content: '' }, call: RC([], ['/workspace/out']), expect: 'require' },
  { name: 'fast path never covers execute_cmd', rules: 'SEED', tool: 'execute_cmd', args: sh('ls'), call: RC(['/workspace'], ['/workspace']), expect: 'require' },
  { name: 'fast path never overrides shared-memory deny', rules: 'SEED', tool: 'write_file', args: { path: 'shared-memory/a', content: '' }, call: RC([], ['shared-memory']), expect: 'deny' },

  // ---- auto-deny
  { name: 'auto-deny turns require into deny', rules: 'SEED', tool: 'execute_cmd', args: sh('ls'), call: { autoDeny: true }, expect: 'deny', by: 'auto_deny' },
  { name: 'auto-deny leaves allow alone', rules: 'SEED', tool: 'read_file', args: { path: 'a' }, call: { autoDeny: true }, expect: 'allow' },
  { name: 'auto-deny after the fast path', rules: 'SEED', tool: 'write_file', args: { path: 'out/a', content: '' }, call: { autoDeny: true, ...RC([], ['out']) }, expect: 'allow' },
  { name: 'auto-deny after a bypass', rules: 'SEED', tool: 'execute_cmd', args: sh('make'), call: { autoDeny: true }, bypasses: ['all'], expect: 'allow' },

  // ---- shell lines
  // ---- a command rule's path condition judges the command's working directory (runner's resolver)
  { name: 'workdir: allow rule for proj, workdir proj', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'make test', workdir: 'proj' }, expect: 'allow' },
  { name: 'workdir: allow rule for proj, nested workdir', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'make test', workdir: '/workspace/proj/sub' }, expect: 'allow' },
  { name: 'workdir: allow rule for proj, model moves the workdir elsewhere', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'make test', workdir: 'other' }, expect: 'require' },
  { name: 'workdir: allow rule for proj, workdir climbs out with ..', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'make test', workdir: 'proj/../other' }, expect: 'require' },
  { name: 'workdir: allow rule for proj, the session directory is proj', rules: 'WORKDIR', tool: 'execute_cmd', args: sh('make test'), call: RC([], [], '/workspace/proj'), expect: 'allow' },
  { name: 'workdir: allow rule for proj, no workdir at all', rules: 'WORKDIR', tool: 'execute_cmd', args: sh('make test'), expect: 'require' },
  { name: 'workdir: allow rule for proj, workdir outside the workspace', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'make test', workdir: '/etc' }, expect: 'require' },
  { name: 'workdir: deny rule for prod, workdir prod', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'rm -rf x', workdir: 'prod' }, expect: 'deny' },
  { name: 'workdir: deny rule for prod, session directory prod', rules: 'WORKDIR', tool: 'execute_cmd', args: sh('/bin/rm x'), call: RC([], [], '/workspace/prod/app'), expect: 'deny' },
  { name: 'workdir: deny rule for prod, unresolvable workdir', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'rm x', workdir: '/etc' }, expect: 'deny' },
  { name: 'workdir: deny rule for prod, unreadable line in prod', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'rm $(echo x)', workdir: 'prod' }, expect: 'deny' },
  { name: 'workdir: deny rule for prod, elsewhere only asks', rules: 'WORKDIR', tool: 'execute_cmd', args: { command: 'rm x', workdir: 'dev' }, expect: 'require' },
  { name: 'shell: allowed command', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls -la'), expect: 'allow' },
  { name: 'shell: git status can run the repo fsmonitor: an allow rule asks', rules: 'SHELL', tool: 'execute_cmd', args: sh('git status'), expect: 'require' },
  { name: 'shell: argv prefix with more args', rules: 'SHELL', tool: 'execute_cmd', args: sh('wc -l a.txt'), expect: 'allow' },
  { name: 'shell: different subcommand', rules: 'SHELL', tool: 'execute_cmd', args: sh('git push'), expect: 'require' },
  { name: 'shell: ; with an unlisted command', rules: 'SHELL', tool: 'execute_cmd', args: sh('git status; curl evil.sh'), expect: 'require' },
  { name: 'shell: && all allowed', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls -la && cat a.txt'), expect: 'allow' },
  { name: 'shell: || with an unlisted command', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls || make'), expect: 'require' },
  { name: 'shell: pipe all allowed', rules: 'SHELL', tool: 'execute_cmd', args: sh('cat a.txt | grep foo | wc -l'), expect: 'allow' },
  { name: 'shell: pipe into an unlisted command', rules: 'SHELL', tool: 'execute_cmd', args: sh('cat a.txt | python3'), expect: 'require' },
  { name: 'shell: background &', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls & make'), expect: 'require' },
  { name: 'shell: newline separated', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls\nrm -rf /'), expect: 'deny' },
  { name: 'shell: $( ) runs its commands', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo $(curl x)'), expect: 'require' },
  { name: 'shell: $( ) needs a human even of allowed commands', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo $(ls)'), expect: 'require' },
  { name: 'shell: backticks run their commands', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo `rm -rf /`'), expect: 'deny' },
  { name: 'shell: $( ) inside double quotes', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo "now $(make)"'), expect: 'require' },
  { name: 'shell: single quotes are literal', rules: 'SHELL', tool: 'execute_cmd', args: sh("echo '$(make) `x`; rm -rf /'"), expect: 'allow' },
  { name: 'shell: output redirection to a file asks', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo hi > notes.txt'), expect: 'require' },
  { name: 'shell: redirection to /dev/null is fine', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls missing 2>/dev/null'), expect: 'allow' },
  { name: 'shell: 2>&1 is fine', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls 2>&1 | grep x'), expect: 'allow' },
  { name: 'shell: input redirection is fine', rules: 'SHELL', tool: 'execute_cmd', args: sh('grep x < a.txt'), expect: 'allow' },
  { name: 'shell: here-documents need a human', rules: 'SHELL', tool: 'execute_cmd', args: sh("cat <<'EOF'\n$(make)\nEOF"), expect: 'require' },
  { name: 'shell: unquoted here-doc runs $( )', rules: 'SHELL', tool: 'execute_cmd', args: sh('cat <<EOF\n$(make)\nEOF'), expect: 'require' },
  { name: 'shell: here-doc then another command', rules: 'SHELL', tool: 'execute_cmd', args: sh('cat <<EOF\nhello\nEOF\nmake'), expect: 'require' },
  { name: 'shell: subshells need a human', rules: 'SHELL', tool: 'execute_cmd', args: sh('(ls; cat x)'), expect: 'require' },
  { name: 'shell: group with an unlisted command', rules: 'SHELL', tool: 'execute_cmd', args: sh('{ ls; make; }'), expect: 'require' },
  { name: 'shell: sh -c wrapper never allowed', rules: 'SHELL', tool: 'execute_cmd', args: sh('sh -c "ls"'), expect: 'require' },
  { name: 'shell: bash -c wrapper', rules: 'SHELL', tool: 'execute_cmd', args: sh('bash -c ls'), expect: 'require' },
  { name: 'shell: eval wrapper', rules: 'SHELL', tool: 'execute_cmd', args: sh('eval ls'), expect: 'require' },
  { name: 'shell: env wrapper', rules: 'SHELL', tool: 'execute_cmd', args: sh('env FOO=1 ls'), expect: 'require' },
  { name: 'shell: xargs wrapper', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls | xargs rm'), expect: 'require' },
  { name: 'shell: find -exec wrapper', rules: 'SHELL', tool: 'execute_cmd', args: sh('find . -name x -exec rm {} ;'), expect: 'require' },
  { name: 'shell: find without -exec is allowed', rules: 'SHELL', tool: 'execute_cmd', args: sh('find . -name "*.ts"'), expect: 'allow' },
  { name: 'shell: sudo is denied by its rule', rules: 'SHELL', tool: 'execute_cmd', args: sh('sudo ls'), expect: 'deny' },
  { name: 'shell: /bin/sh path is still a wrapper', rules: 'SHELL', tool: 'execute_cmd', args: sh('/bin/sh -c ls'), expect: 'require' },
  { name: 'shell: assignment prefix never allowed', rules: 'SHELL', tool: 'execute_cmd', args: sh('PATH=/tmp ls'), expect: 'require' },
  { name: 'shell: command name from a variable', rules: 'SHELL', tool: 'execute_cmd', args: sh('$CMD status'), expect: 'require' },
  { name: 'shell: unterminated quote cannot be parsed', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo "hi'), expect: 'require' },
  { name: 'shell: control flow is not parsed', rules: 'SHELL', tool: 'execute_cmd', args: sh('for f in *; do ls $f; done'), expect: 'require' },
  { name: 'shell: line ending with && cannot be parsed', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls &&'), expect: 'require' },
  { name: 'shell: deny anywhere in the line wins', rules: 'SHELL', tool: 'execute_cmd', args: sh('git status && rm -rf /tmp/x'), expect: 'deny' },
  { name: 'shell: glob in a command pattern word', rules: 'SHELL', tool: 'execute_cmd', args: sh('npm run test:unit'), expect: 'allow' },
  { name: 'shell: escaped ; is an argument', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo a \\; make'), expect: 'allow' },
  { name: 'shell: comment is ignored', rules: 'SHELL', tool: 'execute_cmd', args: sh('ls # ; make'), expect: 'allow' },
  { name: 'shell: empty line asks', rules: 'SHELL', tool: 'execute_cmd', args: sh('   '), expect: 'require' },
  { name: 'shell: process substitution runs its command', rules: 'SHELL', tool: 'execute_cmd', args: sh('cat <(make)'), expect: 'require' },
  { name: 'shell: arithmetic expansion is refused', rules: 'SHELL', tool: 'execute_cmd', args: sh('echo $((1+2))'), expect: 'require' },
];

describe('approval gate: (rules, call) → decision', () => {
  beforeAll(() => initShellParser(), 30_000);
  it('has at least 80 cases', () => expect(CASES.length).toBeGreaterThanOrEqual(80));

  const compiled = Object.fromEntries(Object.entries(SETS).map(([k, v]) => [k, new RuleSet(v)])) as Record<
    keyof typeof SETS,
    RuleSet
  >;

  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const input: GateInput = {
      toolName: c.tool,
      arguments: c.args ?? {},
      agentId: 'main',
      source: 'web',
      isAdmin: false,
      bypasses: c.bypasses,
      ...c.call,
    };
    const r = evaluate(compiled[c.rules], input);
    expect({ decision: r.decision, ...(c.by ? { by: r.by } : {}) }).toEqual({
      decision: c.expect,
      ...(c.by ? { by: c.by } : {}),
    });
  });
});
