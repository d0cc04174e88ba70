import { bypassCovers, narrowScopes } from './session-bypass';
import { evaluate } from './rule-engine';
import { GateInput, RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { initShellParser } from './shell-analysis';

/**
 * "Approve for this session" covers the approved invocation, not the program. Each
 * pair: a human approves the first line for the session; the second line (which writes or runs
 * code) must not be covered by the scope that approval opened.
 */

const sh = (command: string, bypasses?: GateInput['bypasses']): GateInput => ({
  toolName: 'execute_cmd',
  arguments: { command },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
  bypasses,
});
const ASK_ALL = new RuleSet([
  {
    id: '00000000-0000-4000-9000-000000000001',
    toolPattern: '*',
    pathPattern: null,
    commandPattern: null,
    agentId: null,
    source: null,
    securityGroup: null,
    action: 'require',
    priority: 999999,
    ord: 1,
    name: 'rule 1',
  } satisfies RuleRow,
]);

export const REGRESSIONS: Array<[approved: string, later: string]> = [
  ['sed -n 1p Makefile', "sed '--expression=1e touch PWNED'"],
  ['sed -n 1p Makefile', "sed -n 1p Makefile '--expression=1e touch PWNED'"],
  ['sed -n 1p Makefile', 'sed -n 1p -i Makefile'],
  ['find . -name x', 'find . -delete'],
  ['find . -name x', 'find . -name x -delete'],
  ['tar -tf a.tar', 'tar -tf a.tar --checkpoint-action=exec=CMD'],
  ['rg TODO', 'rg --pre=sh TODO'],
  ['python3 --version', "python3 -c 'import os'"],
  ['python3 --version', "python3 --version -c 'import os'"],
  ['make', 'make --file=evil.mk'],
  ['git status', 'git --git-dir=evil status'],
];

describe('narrow session approvals cover the approved invocation (regressions)', () => {
  beforeAll(() => initShellParser(), 30_000);

  it.each(REGRESSIONS)('approving %j does not cover %j', (approved, later) => {
    const scopes = narrowScopes('execute_cmd', { command: approved }, null);
    expect(scopes.length).toBeGreaterThan(0);
    expect(bypassCovers(scopes[0], sh(approved))).toBe(true);
    for (const s of scopes) expect(bypassCovers(s, sh(later))).toBe(false);
    expect(evaluate(ASK_ALL, sh(later, scopes)).decision).toBe('require');
  });
});
