import { evaluate } from './rule-engine';
import { GateInput, RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { effectiveCommands, gateRunnerKnowledge, runsCodeReason } from './command-match';
import { initShellParser } from './shell-analysis';

/**
 * Wrappers the sandbox image holds (found by `test/e2e/wrapper-sweep.e2e-spec.ts`, which runs
 * every executable as `X rm marker`, `X -c "rm marker"`, …) run their arguments: a deny rule on
 * `rm` matches `rm` behind each of them, even under a session bypass of everything.
 */

let ord = 0;
const row = (toolPattern: string, commandPattern: string | null, action: string, priority: number): RuleRow => ({
  id: `00000000-0000-4000-9000-${String(++ord).padStart(12, '0')}`,
  toolPattern,
  pathPattern: null,
  commandPattern,
  agentId: null,
  source: null,
  securityGroup: null,
  action,
  priority,
  ord,
  name: `rule ${ord}`,
});

const RULES = new RuleSet([row('execute_cmd', 'rm *', 'deny', 40), row('execute_cmd', '*', 'require', 90)]);

/** Each line runs `rm x` (under dash, as root where the wrapper needs privileges). */
const LINES = [
  'unshare rm x',
  'unshare -r rm x',
  'unshare --map-root-user --fork rm x',
  'unshare -m --propagation private rm x',
  'setpriv rm x',
  'setpriv --reuid=1 rm x',
  'setpriv --reuid 1 --regid 1 --clear-groups rm x',
  'prlimit rm x',
  'prlimit --nofile=10 rm x',
  'prlimit -n10 --pid 1 rm x',
  'script -qc "rm x" /dev/null',
  'script -q -c "rm x" /dev/null',
  "script --command 'rm x' /dev/null",
  'script -c "rm x"',
  'nsenter -t 1 rm x',
  'nsenter --target 1 -m -u rm x',
  'nsenter -t 1 -- rm x',
  'fakeroot rm x',
  'fakeroot -s state -- rm x',
  'valgrind rm x',
  'valgrind --tool=memcheck --log-file=/dev/null rm x',
  'choom -n 1 -- rm x',
  'linux64 rm x',
  'setarch x86_64 rm x',
  'setarch x86_64 -R rm x',
  'runcon -t t rm x',
  'sg root -c "rm x"',
  'ssh-agent rm x',
  'dbus-run-session -- rm x',
  'watch -n 1 rm x',
  'dpkg-architecture -c rm x',
  'fstab-decode rm x',
  'logsave /dev/null rm x',
  'heaptrack -o out rm x',
  'memusage -n name rm x',
  'sotruss -o out -- rm x',
  'not-14 rm x',
  "tmux -c 'rm x'",
  "npx -c 'rm x'",
  'fakeroot-tcp rm x',
  'fakeroot-sysv rm x',
  'x86_64 rm x',
  'i386 rm x',
  "watch 'rm x'",
  "flock f -c 'rm x'",
  'luit -- rm x',
  'luit -encoding UTF-8 rm x',
];

describe('wrappers of the sandbox image: a deny on rm matches rm behind them', () => {
  beforeAll(() => initShellParser(), 30_000);

  it.each(LINES)('%j is denied (also under a bypass of everything)', (line) => {
    for (const bypasses of [undefined, ['all' as const]]) {
      const input: GateInput = {
        toolName: 'execute_cmd',
        arguments: { command: line },
        agentId: 'main',
        source: 'web',
        isAdmin: false,
        bypasses,
      };
      expect(evaluate(RULES, input).decision).toBe('deny');
    }
  });

  it.each([
    ['unshare --map-root-user --fork rm x', ['rm', 'x']],
    ['setpriv --reuid 1 --regid 1 --clear-groups rm x', ['rm', 'x']],
    ['prlimit -n10 --pid 1 rm x', ['rm', 'x']],
    ['nsenter --target 1 -m -u rm x', ['rm', 'x']],
    ['valgrind --tool=memcheck --log-file=/dev/null rm x', ['rm', 'x']],
    ['setarch x86_64 -R rm x', ['rm', 'x']],
    ['timeout -s KILL 1 rm x', ['rm', 'x']],
  ])('%j runs %j', (line, inner) => {
    expect(effectiveCommands(line.split(' '))).toContainEqual(inner);
  });

  it('knows each wrapper and interpreter by name', () => {
    for (const p of [
      'unshare',
      'setpriv',
      'prlimit',
      'script',
      'nsenter',
      'fakeroot',
      'valgrind',
      'env',
      'sh',
      'rbash',
    ].concat(['newgrp', 'not-14', '/usr/bin/tmux', 'find']))
      expect([p, gateRunnerKnowledge(p)]).toEqual([p, 'runs_command']);
    for (const p of [
      'perl',
      'python3',
      '/usr/bin/python3.11',
      'perl5.36.0',
      'perl5.36-x86_64-linux-gnu',
      'node',
      'mawk',
    ])
      expect([p, gateRunnerKnowledge(p)]).toEqual([p, 'runs_code']);
    for (const p of ['ls', 'cat', 'rm', 'true', 'gzip', 'cpp-12', 'constructor', 'sha256sum'])
      expect([p, gateRunnerKnowledge(p)]).toEqual([p, null]);
  });
});

describe('programs that read the commands they run from standard input run code the gate cannot see', () => {
  beforeAll(() => initShellParser(), 30_000);

  const gate = (line: string, bypasses?: GateInput['bypasses']) =>
    evaluate(RULES, {
      toolName: 'execute_cmd',
      arguments: { command: line },
      agentId: 'main',
      source: 'web',
      isAdmin: false,
      bypasses,
    });

  /** Each line runs `rm x` (under dash) through a program reading it from stdin or a script file. */
  it.each([
    "printf 'rm x' | sh",
    "printf 'rm x' | rbash",
    "printf 'rm x' | dash -s",
    "printf 'rm x' | bash -s --",
    "printf 'rm x' | bash -e",
    'sh script.sh',
    "printf 'rm x' | newgrp",
    "printf 'rm x' | newgrp root",
    "printf 'rm x' | sg root",
    "printf 'rm x' | script -q /dev/null",
    "printf 'rm x' | su",
    "printf 'rm x' | tmux",
    'printf \'import os; os.unlink("x")\' | python3',
    'printf \'import os; os.unlink("x")\' | python3.11 -',
    'printf \'unlink "x"\' | perl',
    'printf \'unlink "x"\' | perl5.36-x86_64-linux-gnu',
    'printf \'require("fs").unlinkSync("x")\' | node',
  ])('%j needs a human under a deny rule, even under a bypass of everything', (line) => {
    for (const bypasses of [undefined, ['all' as const]]) {
      const d = gate(line, bypasses);
      expect([line, d.decision, d.needsHuman]).toEqual([line, 'require', true]);
    }
  });

  it.each([
    'sh -c ls',
    'bash -ec ls',
    'sg root ls',
    'script -qc ls /dev/null',
    'su -c ls',
    'tmux ls',
    'python3 --version',
  ])('%j names its command or code on the line: not read as running stdin code', (line) => {
    expect(runsCodeReason(line.split(' '))).toBeNull();
  });

  it.each(['sh', 'bash -s', 'sh script.sh', 'newgrp', 'sg root', 'script -q /dev/null'])(
    '%j reads its commands from stdin or a file: runs code',
    (line) => {
      expect(runsCodeReason(line.split(' '))).toMatch(/standard input/);
    },
  );
});

describe('own keys only: an object property name is no program', () => {
  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__proto__-14'])('%j', (p) => {
    expect(gateRunnerKnowledge(p)).toBeNull();
    expect(gateRunnerKnowledge(`/usr/bin/${p}`)).toBeNull();
    expect(effectiveCommands([p, 'rm', 'x'])).toEqual([[p, 'rm', 'x']]);
  });
});
