import fc from 'fast-check';
import { recordAttackSuite } from '@skald/testing/attack-suite';
import { evaluate } from './rule-engine';
import { GateInput, RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { initShellParser } from './shell-analysis';

/**
 * Deny rules that name a subcommand match it after any options the program takes
 * (`git -C . push`, `make -f x deploy`), and a deny on `rm` holds through the wrappers and
 * interpreters the review found (`unshare`, `setpriv`, `prlimit`, `script -c`, `nsenter`,
 * `fakeroot`, `valgrind`, `perl -e`, `python3 -c`, …): denied, or a human — never allowed, not
 * even under the widest session bypass.
 */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`deny after options: seed ${SEED} (FC_SEED=${SEED} replays)`);

let ord = 0;
const row = (commandPattern: string | null, action: string, priority: number): RuleRow => ({
  id: `00000000-0000-4000-9000-${String(++ord).padStart(12, '0')}`,
  toolPattern: 'execute_cmd',
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
const RULES = new RuleSet([
  row('git push', 'deny', 40),
  row('make deploy', 'deny', 40),
  row('rm *', 'deny', 40),
  row('git *', 'allow', 50),
  row('make *', 'allow', 50),
  row(null, 'require', 999999),
]);
const sh = (command: string, bypasses?: GateInput['bypasses']): GateInput => ({
  toolName: 'execute_cmd',
  arguments: { command },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
  bypasses,
});

export const DENY_AFTER_OPTIONS = [
  'git -C . push',
  'git -C. push',
  'git -c k=v push',
  'git -ck=v push',
  'git --git-dir=x push',
  'git --git-dir x push',
  'git --work-tree=. --git-dir .git push origin main',
  'git --no-pager -C . push',
  'make -C . deploy',
  'make -C. deploy',
  'make -f x deploy',
  'make -fx deploy',
  'make --file=x deploy',
  'make --file x deploy',
  'make -j 4 deploy',
  'make -k -f x -C . deploy',
];

export const WRAPPED_RM = [
  'unshare rm x',
  'unshare -r rm x',
  'unshare --map-root-user rm x',
  'unshare -S 0 rm x',
  'setpriv rm x',
  'setpriv --reuid 1000 rm x',
  'setpriv --no-new-privs rm x',
  'prlimit rm x',
  'prlimit --nofile=10 rm x',
  'prlimit -p 1 rm x',
  'script -qc "rm x" /dev/null',
  "script -q -c 'rm x' /dev/null",
  "script --command='rm x' /dev/null",
  'nsenter rm x',
  'nsenter -t 1 -m rm x',
  'fakeroot rm x',
  'fakeroot -- rm x',
  'valgrind rm x',
  'valgrind --tool=none rm x',
  'perl -e \'unlink "x"\'',
  'perl -e \'system("rm x")\'',
  'python3 -c \'import os; os.remove("x")\'',
  'python3.12 -c "import os"',
  'python3 evil.py',
  'node -e \'require("fs").unlinkSync("x")\'',
  'ruby -e \'File.delete("x")\'',
  'php -r \'unlink("x");\'',
  'busybox rm x',
  "busybox sh -c 'rm x'",
  'awk \'BEGIN{system("rm x")}\'',
  'gawk \'BEGIN{f="system"; @f("rm x")}\'',
  "sed -n '1e rm x' f",
  "tar -cf a.tar --checkpoint-action=exec='rm x' .",
  "tar -xf a.tar --to-command='rm x'",
  'rg --pre=rm TODO',
  'git -c alias.st=!rm st',
  'lua -e "os.remove(\'x\')"',
];

describe('deny rules and options before the subcommand, wrappers and interpreters', () => {
  beforeAll(() => initShellParser(), 30_000);

  it.each(DENY_AFTER_OPTIONS)('%j is denied (deny rule after options; allow make * / git *)', (line) => {
    for (const bypasses of [undefined, ['all' as const]])
      expect(evaluate(RULES, sh(line, bypasses)).decision).toBe('deny');
  });

  it.each(['git status', 'git -C . status', 'make', 'make -C . build', 'make -f x build'])(
    '%j is not denied by git push / make deploy',
    (line) => {
      expect(evaluate(RULES, sh(line)).decision).not.toBe('deny');
    },
  );

  it.each(WRAPPED_RM)('%j: denied or a human under deny rm, never allowed by a bypass', (line) => {
    for (const bypasses of [undefined, ['all' as const], [{ category: 'shell' }]]) {
      const r = evaluate(RULES, sh(line, bypasses));
      expect(r.decision === 'deny' || (r.decision === 'require' && r.needsHuman === true)).toBe(true);
    }
  });

  it('generated option prefixes before the subcommand never evade git push / make deploy', () => {
    const gitOpt = fc.oneof(
      fc.constantFrom('--no-pager', '-p', '--bare', '--literal-pathspecs', '-P'),
      fc
        .tuple(
          fc.constantFrom('-C', '-c', '--git-dir', '--work-tree', '--namespace'),
          fc.constantFrom('.', 'x', 'k=v', 'a b'),
        )
        .chain(([o, v]) => fc.constantFrom(`${o} '${v}'`, o.startsWith('--') ? `'${o}=${v}'` : `'${o}${v}'`)),
    );
    const makeOpt = fc.oneof(
      fc.constantFrom('-k', '-s', '-B', '-n', '--silent', '-j', '-j4', '--keep-going'),
      fc
        .tuple(
          fc.constantFrom('-C', '-f', '-I', '-o', '-W', '--file', '--directory', '--makefile', '-j', '-l'),
          fc.constantFrom('.', 'x', 'm.mk', '4'),
        )
        .chain(([o, v]) => fc.constantFrom(`${o} ${v}`, o.startsWith('--') ? `${o}=${v}` : `${o}${v}`)),
    );
    let lines = 0;
    fc.assert(
      fc.property(fc.array(gitOpt, { maxLength: 4 }), fc.array(makeOpt, { maxLength: 4 }), (g, m) => {
        for (const line of [`git ${g.join(' ')} push`, `make ${m.join(' ')} deploy`]) {
          lines++;
          expect(evaluate(RULES, sh(line, ['all'])).decision).toBe('deny');
        }
      }),
      { seed: SEED, numRuns: 1500 },
    );
    recordAttackSuite('deny-evasion', 'options before subcommand', {
      lines,
      table: DENY_AFTER_OPTIONS.length,
      wrapped_rm: WRAPPED_RM.length,
    });
  });
});
