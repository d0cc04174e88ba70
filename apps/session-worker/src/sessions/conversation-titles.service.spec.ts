/**
 * ConversationTitlesService with a faked LLM manager and repositories: a conversation's title comes
 * from its model, counted in the ledger; without a model (budget used up, none healthy, a failed
 * call) it is the start of the first question (trailing punctuation dropped); titles off means no call at all; and a title the
 * user set is never overwritten (the repository's conditional write decides, the service never
 * logs a title it did not write).
 */
import { LlmManager } from '@skald/llm';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import { LlmService } from '../llm/llm.service';
import { ConversationTitlesService } from './conversation-titles.service';
import { ConversationsRepository } from './conversations.repository';

const first = {
  userId: 'u1',
  agentId: 'main',
  pinnedClient: null,
  question: 'How do I   rotate my keys?',
  answer: 'Like this.',
};

function setUp(titles: 'on' | 'off' = 'on') {
  const log = { info: jest.fn(), warn: jest.fn() };
  const t = newTestService(ConversationTitlesService, [
    fake(WORKER_CONFIG, { SKALD_TITLES: titles } as WorkerConfig),
    fake(WORKER_LOGGER, log as unknown as Logger),
  ]);
  const repo = t.mock(ConversationsRepository);
  repo.firstExchange.mockResolvedValue(first);
  repo.setGeneratedTitle.mockResolvedValue(true);
  const manager = t.mock(LlmManager);
  manager.select.mockResolvedValue({ name: 'local' } as never);
  manager.streamChat.mockResolvedValue({
    content: 'Rotating keys\nmore text',
    clientName: 'local',
    model: 'm',
    metered: { inputTokens: 10, outputTokens: 3, cachedInputTokens: 0, estimated: false, costUsd: 0 },
  } as never);
  t.mock(LlmService).admit.mockResolvedValue({ kind: 'admitted', hold: null });
  t.mock(LlmUsageRepository).record.mockResolvedValue(undefined);
  return { ...t, repo, manager, log };
}

describe('ConversationTitlesService', () => {
  it("titles a conversation with its model's first line and records the call as a title call", async () => {
    const { sut, repo, mock } = setUp();
    await sut.onTurnEnded('s1');
    expect(repo.setGeneratedTitle).toHaveBeenCalledWith('s1', 'Rotating keys');
    expect(mock(LlmUsageRepository).record).toHaveBeenCalledWith(
      expect.objectContaining({ userId: 'u1', sessionId: 's1', purpose: 'title', inputTokens: 10 }),
    );
  });

  it("uses the question's start, without asking a model, when the user's budget is used up", async () => {
    const { sut, repo, manager, mock } = setUp();
    mock(LlmService).admit.mockResolvedValue({ kind: 'refused', refusal: { code: 'exhausted', message: 'budget' } });
    await sut.onTurnEnded('s1');
    expect(manager.streamChat).not.toHaveBeenCalled();
    expect(repo.setGeneratedTitle).toHaveBeenCalledWith('s1', 'How do I rotate my keys');
  });

  it("uses the question's start when the model call fails", async () => {
    const { sut, repo, manager } = setUp();
    manager.streamChat.mockRejectedValue(new Error('timeout'));
    await sut.onTurnEnded('s1');
    expect(repo.setGeneratedTitle).toHaveBeenCalledWith('s1', 'How do I rotate my keys');
  });

  it('does nothing when titles are off, or before the first exchange exists', async () => {
    const off = setUp('off');
    await off.sut.onTurnEnded('s1');
    expect(off.repo.firstExchange).not.toHaveBeenCalled();
    const early = setUp();
    early.repo.firstExchange.mockResolvedValue(null);
    await early.sut.onTurnEnded('s1');
    expect(early.manager.streamChat).not.toHaveBeenCalled();
    expect(early.repo.setGeneratedTitle).not.toHaveBeenCalled();
  });

  it('never rejects: a failing repository is a warning', async () => {
    const { sut, repo, log } = setUp();
    repo.setGeneratedTitle.mockRejectedValue(new Error('db down'));
    await expect(sut.onTurnEnded('s1')).resolves.toBeUndefined();
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({ sessionId: 's1' }),
      'could not title a conversation',
    );
  });

  it('logs no title when the user had set one meanwhile (the write is refused)', async () => {
    const { sut, repo, log } = setUp();
    repo.setGeneratedTitle.mockResolvedValue(false);
    await sut.onTurnEnded('s1');
    expect(log.info).not.toHaveBeenCalledWith(expect.anything(), 'conversation titled');
  });
});
