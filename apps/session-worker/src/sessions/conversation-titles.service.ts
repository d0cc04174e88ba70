import { Inject, Injectable } from '@nestjs/common';
import { LlmManager } from '@skald/llm';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { LlmService } from '../llm/llm.service';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import { cleanTitle, fallbackTitle, titleRequest } from './conversation-titles';
import { ConversationsRepository } from './conversations.repository';

/** How long a title request may take before the first question's start is used instead. */
const TITLE_TIMEOUT_MS = 30_000;
/** Title requests running at once on this worker; more wait for the next finished turn. */
const MAX_RUNNING = 4;

/**
 * Writes a conversation's title in the background once its first exchange exists: one call to the
 * conversation's model (its pin, else AUTO) through the LLM manager, counted in the ledger and the
 * daily budget. A title the user set is never overwritten; without a model (none healthy, budget
 * used up, failure) the start of the first question is the title.
 */
@Injectable()
export class ConversationTitlesService {
  private readonly running = new Set<string>();

  constructor(
    private readonly repo: ConversationsRepository,
    private readonly manager: LlmManager,
    private readonly llm: LlmService,
    private readonly usage: LlmUsageRepository,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {}

  get enabled(): boolean {
    return this.config.SKALD_TITLES === 'on';
  }

  /** A turn of the session ended: title it if it has its first exchange and no title. Never rejects. */
  async onTurnEnded(sessionId: string): Promise<void> {
    if (!this.enabled || this.running.has(sessionId) || this.running.size >= MAX_RUNNING) return;
    this.running.add(sessionId);
    try {
      const first = await this.repo.firstExchange(sessionId);
      if (!first) return;
      const title = (await this.ask(sessionId, first)) ?? fallbackTitle(first.question);
      if (await this.repo.setGeneratedTitle(sessionId, title))
        this.log.info({ userId: first.userId, sessionId }, 'conversation titled');
    } catch (e) {
      this.log.warn({ sessionId, err: e instanceof Error ? e.message : String(e) }, 'could not title a conversation');
    } finally {
      this.running.delete(sessionId);
    }
  }

  private async ask(
    sessionId: string,
    first: { userId: string; pinnedClient: string | null; question: string; answer: string },
  ): Promise<string | null> {
    const admitted = await this.llm.admit(first.userId);
    if (admitted.kind === 'refused') return null;
    const hold = admitted.hold;
    const client = await this.manager.select({ pinned: first.pinnedClient, tried: [] });
    if (!client) {
      if (hold) await this.llm.release(first.userId, hold);
      return null;
    }
    try {
      const r = await this.manager.streamChat(client.name, {
        messages: titleRequest(first.question, first.answer),
        signal: AbortSignal.timeout(TITLE_TIMEOUT_MS),
      });
      await this.usage
        .record({
          userId: first.userId,
          sessionId,
          frameId: null,
          messageId: null,
          purpose: 'title',
          client: r.clientName,
          model: r.model,
          inputTokens: r.metered.inputTokens,
          outputTokens: r.metered.outputTokens,
          cachedInputTokens: r.metered.cachedInputTokens,
          estimated: r.metered.estimated,
          costUsd: r.metered.costUsd,
        })
        .catch((e: unknown) => this.log.warn({ sessionId, err: String(e) }, 'could not record a title call'));
      if (hold)
        await this.llm.settle(first.userId, hold, {
          tokens: r.metered.inputTokens + r.metered.outputTokens,
          costUsd: r.metered.costUsd,
        });
      return cleanTitle(r.content);
    } catch (e) {
      if (hold) await this.llm.release(first.userId, hold);
      this.log.info(
        { sessionId, client: client.name, err: e instanceof Error ? e.message : String(e) },
        'title call failed',
      );
      return null;
    }
  }
}
