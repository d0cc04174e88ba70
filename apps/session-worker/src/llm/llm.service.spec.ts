/**
 * LlmService with a faked LLM manager and ledger: pinning a model by number, name or `auto` (and
 * the message a user reads for a model that does not exist), the daily token budget refusing a
 * round once used up, and a ledger write that fails never failing the answer.
 */
import { expect } from '@jest/globals';
import { Actor } from '@skald/contracts';
import { LlmManager } from '@skald/llm';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { SessionsRepository } from '../sessions/sessions.repository';
import { LlmUsageRepository } from './llm-usage.repository';
import { LlmService } from './llm.service';

const actor = { userId: 'u1', role: 'user' } as Actor;

function setUp(dailyTokens = 0) {
  const log = { info: jest.fn(), warn: jest.fn() };
  const t = newTestService(LlmService, [
    fake(WORKER_CONFIG, { SKALD_USER_DAILY_TOKENS: dailyTokens } as WorkerConfig),
    fake(WORKER_LOGGER, log as unknown as Logger),
  ]);
  const manager = t.mock(LlmManager);
  manager.names.mockReturnValue(['fast', 'strong']);
  manager.has.mockImplementation((n: string) => n === 'fast' || n === 'strong');
  t.mock(SessionsRepository).active.mockResolvedValue({ id: 's1' } as never);
  return { ...t, log, usage: t.mock(LlmUsageRepository), sessions: t.mock(SessionsRepository) };
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

describe('LlmService budget and ledger', () => {
  it('admits every round without a budget, without reading the ledger', async () => {
    const { sut, usage } = setUp(0);
    expect(await sut.admit('u1')).toBeNull();
    expect(usage.today).not.toHaveBeenCalled();
  });

  it("refuses a round once today's tokens reach the budget", async () => {
    const { sut, usage } = setUp(1000);
    usage.today.mockResolvedValueOnce({ usedTokens: 999 } as never);
    expect(await sut.admit('u1')).toBeNull();
    usage.today.mockResolvedValueOnce({ usedTokens: 1000, resetsAt: new Date(Date.now() + 3_600_000) });
    expect(await sut.admit('u1')).toMatchObject({ code: 'exhausted', message: expect.stringContaining('1,000') });
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
