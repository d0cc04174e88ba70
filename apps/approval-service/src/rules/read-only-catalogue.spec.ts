import { evaluate } from './rule-engine';
import { RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { analyzeCommand, initShellParser } from './shell-analysis';
import { catalogueRisk, writesOrRuns } from './read-only-catalogue';

let ord = 0;
const allow = (commandPattern: string): RuleRow => ({
  id: `00000000-0000-4000-9000-${String(++ord).padStart(12, '0')}`,
  toolPattern: 'execute_cmd',
  pathPattern: null,
  commandPattern,
  agentId: null,
  source: null,
  securityGroup: null,
  action: 'allow',
  priority: 50,
  ord,
  name: `rule ${ord}`,
});
const PROGRAMS = [
  'find',
  'git',
  'sed',
  'sort',
  'tee',
  'awk',
  'less',
  'tar',
  'rg',
  'uniq',
  'tree',
  'curl',
  'wget',
  'date',
  'dd',
  'unzip',
  'yq',
  'ls',
  'cat',
  'grep',
  'head',
  'wc',
];
const RULES = new RuleSet([
  ...PROGRAMS.map((p) => allow(`${p} *`)),
  { ...allow('*'), toolPattern: '*', commandPattern: null, action: 'require', priority: 999999 },
]);

const argvOf = (line: string): string[] => {
  const a = analyzeCommand(line);
  return a.kind === 'needs_human' ? [] : a.commands[0].argv;
};
const check = (line: string) =>
  evaluate(RULES, {
    toolName: 'execute_cmd',
    arguments: { command: line },
    agentId: 'main',
    source: 'web',
    isAdmin: false,
  });

describe('read-only catalogue: an allow rule on a writing or executing invocation asks', () => {
  beforeAll(() => initShellParser(), 30_000);

  it.each([
    "find . -exec cat '{}' ';'",
    "find . -execdir ls ';'",
    "find . -ok rm '{}' ';'",
    "find . -okdir rm '{}' +",
    'find . -delete',
    'find . -fprint out',
    'find . -fprint0 out',
    'find . -fprintf out %p',
    'find . -fls out',
    'git status',
    'git log --output=/workspace/x',
    'git -c core.pager=sh log',
    'git --exec-path=/tmp log',
    'git config core.fsmonitor x',
    'git diff',
    'sed -i s/a/b/ f',
    'sed -ni 1p f',
    'sed --in-place=.bak s/a/b/ f',
    "sed 's/a/b/w out' f",
    'sed 1e f',
    'sed -n -e 1p -e w f',
    'sort -o out in',
    'sort -uo out in',
    'sort --output=out in',
    'sort --compress-program=sh in',
    'tee out',
    'awk \'{system("id")}\' f',
    'awk \'{print > "out"}\' f',
    'awk \'{print | "sh"}\' f',
    'awk -f prog.awk f',
    'less f',
    'tar -xf a.tar',
    'tar xf a.tar',
    'tar -tf a.tar --to-command=sh',
    'rg --pre sh x',
    'uniq in out',
    'tree -o out',
    'curl -o out https://x',
    'curl -O https://x/f',
    'wget https://x',
    'date -s 2020-01-01',
    'dd if=a of=b',
    'unzip a.zip',
    'yq -i .a f.yaml',
  ])('%j asks', (line) => {
    const r = check(line);
    expect(r.decision).toBe('require');
    // what runs code (find -exec, sed e, awk system, …) is matched by no allow rule at all (the
    // catch-all asks; under a deny rule a human decides); the rest match their allow rule and ask
    expect(r.reason).toMatch(/asks|priority 999999/);
    if (!r.reason.includes('asks')) expect(catalogueRisk(argvOf(line))).toBe('runs');
  });

  it.each([
    'find . -name x -type f -print',
    'sed -n 1,10p f',
    'sed 5p f',
    'sort -u f',
    "awk '{print $1}' f",
    'tar -tf a.tar',
    'tar tvf a.tar',
    'uniq f',
    'curl --version'.replace('curl', 'ls'),
    'unzip -l a.zip',
    'cat f',
    'grep -rn x .',
    'head -5 f',
  ])('%j stays allowed', (line) => {
    expect(check(line).decision).toBe('allow');
  });

  it('names what the invocation does', () => {
    expect(writesOrRuns(['find', '.', '-delete'])).toContain('deletes files');
    expect(writesOrRuns(['git', 'status'])).toContain('fsmonitor');
    expect(writesOrRuns(['ls', '-la'])).toBeNull();
  });
});
