/**
 * GateService with faked rules, bypasses, audit and catalog: the decision a tool call gets and
 * what is kept of it — refused outright while the audit log cannot take it, asked of a human
 * when the rules cannot be read, relaxed by a session bypass only when the rules require a human,
 * and every checked call audited.
 */
import { ParsedRequestOf } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { AuditService } from '../audit/audit.service';
import { BypassesService } from '../bypasses/bypasses.service';
import { CatalogService } from '../catalog/catalog.service';
import { APPROVAL_LOGGER } from '../config';
import { RuleSet } from '../rules/rule-set';
import { RulesService } from '../rules/rules.service';
import { ruleRow } from '../testing-fixtures/rule-row';
import { GateService } from './gate.service';

const log = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn(), child: () => log };

const RULES = new RuleSet([
  ruleRow(1, 'web_search', 'allow', { id: 'allow-web' }),
  ruleRow(2, 'web_fetch', 'require', { id: 'ask-fetch' }),
]);

const check = (tool: string, over: Partial<ParsedRequestOf<'approval.check'>> = {}) =>
  ({
    actor: { userId: 'u1', role: 'user' },
    session_id: 's1',
    tool_call_id: 'c1',
    tool_name: tool,
    arguments: { q: 'x' },
    agent_id: 'main',
    source: 'web',
    ...over,
  }) as ParsedRequestOf<'approval.check'>;

function setUp() {
  const t = newTestService(GateService, [fake(APPROVAL_LOGGER, log as unknown as Logger)]);
  const audit = t.mock(AuditService);
  Object.defineProperty(audit, 'accepting', { value: true, writable: true });
  t.mock(RulesService).ruleSet.mockResolvedValue(RULES);
  const bypasses = t.mock(BypassesService);
  bypasses.activeScopes.mockResolvedValue([]);
  return { ...t, audit, bypasses, rules: t.mock(RulesService) };
}

describe('GateService.check', () => {
  it('allows what a rule allows, and audits the decision with the call and its rule', async () => {
    const { sut, audit } = setUp();
    expect(await sut.check(check('web_search'))).toMatchObject({ decision: 'allow', by: 'rule', ruleId: 'allow-web' });
    expect(audit.record).toHaveBeenCalledWith(
      expect.objectContaining({
        userId: 'u1',
        sessionId: 's1',
        toolCallId: 'c1',
        toolName: 'web_search',
        decision: 'allow',
      }),
    );
  });

  it('asks a human when a rule requires it and the session has no bypass', async () => {
    const { sut, bypasses } = setUp();
    expect(await sut.check(check('web_fetch'))).toMatchObject({ decision: 'require', ruleId: 'ask-fetch' });
    expect(bypasses.activeScopes).toHaveBeenCalledWith('s1');
  });

  it('writes a require to the audit before answering (its inbox item names the rule from it); buffers the rest', async () => {
    const { sut, audit } = setUp();
    let written = false;
    audit.recordNow.mockImplementation(async () => {
      await new Promise((r) => setImmediate(r));
      written = true;
      return true;
    });
    await sut.check(check('web_fetch'));
    expect(written).toBe(true);
    expect(audit.recordNow).toHaveBeenCalledWith(
      expect.objectContaining({ decision: 'require', ruleId: 'ask-fetch', toolName: 'web_fetch' }),
    );
    expect(audit.record).not.toHaveBeenCalled();
    await sut.check(check('web_search'));
    expect(audit.record).toHaveBeenCalledWith(expect.objectContaining({ decision: 'allow' }));
    expect(audit.recordNow).toHaveBeenCalledTimes(1);
  });

  it("lets a required call through on the session's bypass, and never reads bypasses for an allowed one", async () => {
    const { sut, bypasses } = setUp();
    bypasses.activeScopes.mockResolvedValue(['all']);
    expect(await sut.check(check('web_fetch'))).toMatchObject({ decision: 'allow', by: 'bypass' });
    bypasses.activeScopes.mockClear();
    await sut.check(check('web_search'));
    expect(bypasses.activeScopes).not.toHaveBeenCalled();
  });

  it('refuses a required call in an auto-deny session instead of waiting for a human', async () => {
    const { sut } = setUp();
    expect(await sut.check(check('web_fetch', { auto_deny: true }))).toMatchObject({
      decision: 'deny',
      by: 'auto_deny',
    });
  });

  it('asks a human when the rules cannot be read', async () => {
    const { sut, rules } = setUp();
    rules.ruleSet.mockRejectedValue(new Error('db down'));
    expect(await sut.check(check('web_search'))).toEqual({
      decision: 'require',
      by: 'rule',
      reason: 'the rules could not be loaded: asking',
    });
  });

  it('refuses every call while the audit log cannot take it, without reading the rules or auditing', async () => {
    const { sut, audit, rules } = setUp();
    Object.defineProperty(audit, 'accepting', { value: false });
    Object.defineProperty(audit, 'pending', { value: 20_000 });
    const result = await sut.check(check('web_search'));
    expect(result).toMatchObject({ decision: 'deny', by: 'policy' });
    expect(result.reason).toContain('20000 decisions wait');
    expect(rules.ruleSet).not.toHaveBeenCalled();
    expect(audit.record).not.toHaveBeenCalled();
  });
});

describe('GateService.test and visibleTools', () => {
  it('refuses a non-admin testing rules without a session', async () => {
    const { sut } = setUp();
    const req = { actor: { userId: 'u1', role: 'user' }, tool_name: 'web_search', arguments: {} };
    await expect(sut.test(req as ParsedRequestOf<'approval.rules.test'>)).rejects.toMatchObject({
      body: { code: 'forbidden' },
    });
  });

  it('tests a call without auditing it', async () => {
    const { sut, audit } = setUp();
    const req = { actor: { userId: 'a', role: 'admin' }, tool_name: 'web_search', arguments: {} };
    expect(await sut.test(req as ParsedRequestOf<'approval.rules.test'>)).toMatchObject({ decision: 'allow' });
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('hides nothing when the rules cannot be read, and records what the model was offered', async () => {
    const { sut, rules, mock } = setUp();
    rules.ruleSet.mockRejectedValue(new Error('db down'));
    const req = { actor: { userId: 'u1', role: 'user' }, tools: ['web_search', 'mcp__x__y'], agent_id: 'main' };
    expect(await sut.visibleTools(req as ParsedRequestOf<'approval.visible_tools'>)).toEqual([
      'web_search',
      'mcp__x__y',
    ]);
    expect(mock(CatalogService).offered).toHaveBeenCalledWith('u1', ['web_search', 'mcp__x__y']);
  });
});
