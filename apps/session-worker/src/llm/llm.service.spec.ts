/**
 * LlmService with a faked LLM manager and ledger: pinning a model by number, name or `auto` (and
 * the message a user reads for a model that does not exist), the budget gate and the settling of
 * a call's hold, and a ledger write that fails never failing the answer.
 */
import { expect } from '@jest/globals';
import { Actor } from '@skald/contracts';
import { LlmManager } from '@skald/llm';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { BudgetsService } from '../budgets/budgets.service';
import { WORKER_LOGGER } from '../config';
import { NO_GROUPS, resolveGroupPolicy } from '../groups/group-policy';
import { GroupPolicyService } from '../groups/group-policy.service';
import { SessionsRepository } from '../sessions/sessions.repository';
import { LlmUsageRepository } from './llm-usage.repository';
import { LlmService } from './llm.service';

const actor = { userId: 'u1', role: 'user' } as Actor;

function setUp() {
  const log = { info: jest.fn(), warn: jest.fn() };
  const t = newTestService(LlmService, [fake(WORKER_LOGGER, log as unknown as Logger)]);
  const manager = t.mock(LlmManager);
  manager.names.mockReturnValue(['fast', 'strong']);
  manager.has.mockImplementation((n: string) => n === 'fast' || n === 'strong');
  t.mock(SessionsRepository).active.mockResolvedValue({ id: 's1' } as never);
  const policies = t.mock(GroupPolicyService);
  policies.of.mockResolvedValue(NO_GROUPS);
  return { ...t, log, usage: t.mock(LlmUsageRepository), sessions: t.mock(SessionsRepository), policies };
}

describe('LlmService pins', () => {
  it('pins by 1-based number or by name, for the source and its active conversation', async () => {
    const { sut, usage, sessions } = setUp();
    expect(await sut.pin(actor, 'web', ' 2 ')).toBe('strong');
    expect(usage.setPin).toHaveBeenCalledWith({ userId: 'u1', source: 'web' }, 'strong');
    expect(sessions.rememberClient).toHaveBeenCalledWith({ userId: 'u1', sessionId: 's1' }, 'strong');
    expect(await sut.pin(actor, 'web', 'fast')).toBe('fast');
  });

  it('clears the pin with auto', async () => {
    const { sut, usage } = setUp();
    expect(await sut.pin(actor, 'web', 'AUTO')).toBe('auto');
    expect(usage.setPin).toHaveBeenCalledWith({ userId: 'u1', source: 'web' }, null);
  });

  it('refuses a model that does not exist, naming the choices, and pins nothing', async () => {
    const { sut, usage } = setUp();
    await expect(sut.pin(actor, 'web', '3')).rejects.toMatchObject({
      body: {
        code: 'invalid_input',
        field: 'client',
        message: expect.stringContaining('choose 1-2, one of fast, strong, or auto'),
      },
    });
    await expect(sut.pin(actor, 'web', 'gpt-9')).rejects.toThrow('unknown model "gpt-9"');
    expect(usage.setPin).not.toHaveBeenCalled();
  });

  it('/model answers a wrong model as text, and /model alone shows the pin', async () => {
    const { sut, usage } = setUp();
    expect(await sut.command(actor, 'web', '/model', 'gpt-9')).toMatch(/^unknown model "gpt-9"/);
    usage.pin.mockResolvedValue('fast');
    expect(await sut.command(actor, 'web', '/model', '')).toMatch(/^Pinned for web: fast\./);
    expect(await sut.command(actor, 'web', '/model', '1')).toBe('Pinned fast for web. /model auto clears it.');
  });
});

describe("LlmService under the user's groups", () => {
  const interns = resolveGroupPolicy([
    { name: 'Interns', allowed_agents: null, allowed_llm_clients: ['strong'], security_groups: [] },
  ]);
  const info = (name: string) =>
    ({ name, model: `${name}-model`, strength: 'medium', scopes: [], priority: 1, health: 'healthy' }) as never;

  it('lists only the allowed clients, each with its configured number (what /model <number> names)', async () => {
    const { sut, policies, mock } = setUp();
    mock(LlmManager).list.mockResolvedValue([info('fast'), info('strong')]);
    policies.of.mockResolvedValue(interns);
    const list = await sut.list(actor, 'web');
    expect(list.items.map((c) => [c.number, c.name])).toEqual([[2, 'strong']]);
    const text = await sut.command(actor, 'web', '/models', '');
    expect(text).toContain('2. strong');
    expect(text).not.toContain('fast');
  });

  it('refuses a pin of a client the groups do not allow, with the sentence a turn would end with', async () => {
    const { sut, usage, policies } = setUp();
    policies.of.mockResolvedValue(interns);
    const refusal = 'The LLM client "fast" is not allowed for your groups ("Interns"); allowed LLM clients: "strong".';
    policies.requireClient.mockImplementation(async (_u: string, c: string) => {
      if (c === 'fast') throw new RemoteError({ code: 'forbidden', message: refusal, field: 'client' });
    });
    await expect(sut.pin(actor, 'web', 'fast')).rejects.toMatchObject({
      body: { code: 'forbidden', message: refusal },
    });
    expect(await sut.command(actor, 'web', '/model', '1')).toBe(refusal);
    expect(usage.setPin).not.toHaveBeenCalled();
    expect(await sut.command(actor, 'web', '/model', 'strong')).toBe('Pinned strong for web. /model auto clears it.');
    expect(await sut.pin(actor, 'web', 'auto')).toBe('auto');
  });
});

describe('LlmService budget and ledger', () => {
  it("asks the budget gate with the turn's read of the owner's limits", async () => {
    const { sut, mock } = setUp();
    const owner = { user: null, groups: [] };
    mock(BudgetsService).admit.mockResolvedValue({ kind: 'admitted', hold: 'h1' });
    expect(await sut.admit('u1', null, owner)).toEqual({ kind: 'admitted', hold: 'h1' });
    expect(mock(BudgetsService).admit).toHaveBeenCalledWith('u1', owner, null);
  });

  it("settles a round's hold with its tokens, cost and message; a compaction's without a message", async () => {
    const { sut, mock } = setUp();
    const metered = { inputTokens: 100, outputTokens: 20, cachedInputTokens: 0, estimated: false, costUsd: 0.5 };
    const round = { userId: 'u1', sessionId: 's1', frameId: 'f', messageId: 'm1', purpose: 'round' } as const;
    await sut.record(round as never, 'fast', 'm', metered, null, 'h1');
    expect(mock(BudgetsService).settle).toHaveBeenCalledWith(
      'u1',
      'h1',
      { tokens: 120, costUsd: 0.5, messageId: 'm1' },
      null,
    );
    await sut.record({ ...round, messageId: null, purpose: 'compaction' } as never, 'fast', 'm', metered, null, 'h2');
    expect(mock(BudgetsService).settle).toHaveBeenLastCalledWith(
      'u1',
      'h2',
      { tokens: 120, costUsd: 0.5, messageId: null },
      null,
    );
    await sut.record(round as never, 'fast', 'm', metered);
    expect(mock(BudgetsService).settle).toHaveBeenCalledTimes(2);
  });

  it('logs, and does not throw, when a call cannot be written to the ledger', async () => {
    const { sut, usage, log } = setUp();
    usage.record.mockRejectedValue(new Error('db down'));
    const usageOfCall = { inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, estimated: false, costUsd: 0 };
    const context = { userId: 'u1', sessionId: 's1', frameId: 'f', messageId: null, purpose: 'turn' };
    await expect(sut.record(context as never, 'fast', 'm', usageOfCall)).resolves.toBeUndefined();
    expect(log.warn).toHaveBeenCalledWith(expect.objectContaining({ userId: 'u1' }), 'could not record LLM usage');
  });
});
