import { Inject, Injectable } from '@nestjs/common';
import type { LlmCallContext, LlmRefusal } from '@skald/agent-loop';
import type { Actor, LlmClientInfo, LlmClientList } from '@skald/contracts';
import { LlmManager, type LlmMeteredUsage } from '@skald/llm';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { SessionsRepository } from '../sessions/sessions.repository';
import { budgetExhaustedText, costText, modelsText } from './llm-texts';
import { LlmUsageRepository } from './llm-usage.repository';

/** What the LLM port needs besides the manager: the budget gate and the ledger. */
export interface LlmAccounting {
  /** `log`: the caller's logger (a turn's: its lines name the turn); the service's own by default. */
  admit(userId: string, log?: Logger | null): Promise<LlmRefusal | null>;
  record(
    context: LlmCallContext,
    client: string,
    model: string,
    usage: LlmMeteredUsage,
    log?: Logger | null,
  ): Promise<void>;
}

const invalidClient = (message: string): RemoteError =>
  new RemoteError({ code: 'invalid_input', message, field: 'client' });

/**
 * The session worker's LLM features: the client list with shared health and the caller's pin,
 * pins (`select_client`, `/model`), the LLM slash commands, and the accounting of every call
 * (ledger in Postgres, per-user daily token budget).
 */
@Injectable()
export class LlmService implements LlmAccounting {
  constructor(
    private readonly manager: LlmManager,
    private readonly usage: LlmUsageRepository,
    private readonly sessions: SessionsRepository,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {}

  private get budget(): number | null {
    return this.config.SKALD_USER_DAILY_TOKENS > 0 ? this.config.SKALD_USER_DAILY_TOKENS : null;
  }

  async list(actor: Actor, source: string | undefined): Promise<LlmClientList> {
    const pinned = source ? await this.usage.pin({ userId: actor.userId, source }) : null;
    const clients = await this.manager.list();
    const items: LlmClientInfo[] = clients.map((c, i) => ({
      number: i + 1,
      name: c.name,
      model: c.model,
      strength: c.strength,
      scopes: c.scopes,
      priority: c.priority,
      health: c.health,
      consecutive_failures: c.consecutiveFailures,
      last_error: c.lastError,
      last_success_at: c.lastSuccessAt,
      last_failure_at: c.lastFailureAt,
      input_cost_per_million: c.pricing?.inputPerMillion ?? null,
      output_cost_per_million: c.pricing?.outputPerMillion ?? null,
      pinned: c.name === pinned,
    }));
    return { items, pinned, health_scope: this.manager.healthMode() };
  }

  /**
   * Pins a client for (user, source) by name or 1-based number, durably; `auto` clears the pin.
   * Returns the pinned name or `auto`. An unknown client is `invalid_input` naming `client`.
   */
  async pin(actor: Actor, source: string, wanted: string): Promise<string> {
    const name = this.resolveClient(wanted.trim());
    await this.usage.setPin({ userId: actor.userId, source }, name === 'auto' ? null : name);
    // The choice is remembered by the source's active conversation (reopening it restores it).
    const { id } = await this.sessions.active({ userId: actor.userId, source });
    await this.sessions.rememberClient({ userId: actor.userId, sessionId: id }, name === 'auto' ? null : name);
    this.log.info({ userId: actor.userId, source, client: name }, 'LLM client pinned');
    return name;
  }

  private resolveClient(wanted: string): string {
    const names = this.manager.names();
    if (wanted.toLowerCase() === 'auto') return 'auto';
    const choices = `choose 1-${names.length}, one of ${names.join(', ')}, or auto`;
    if (/^\d+$/.test(wanted)) {
      const name = names[Number(wanted) - 1];
      if (!name) throw invalidClient(`client: there is no model number ${wanted}; ${choices}`);
      return name;
    }
    if (!this.manager.has(wanted)) throw invalidClient(`client: unknown model "${wanted}"; ${choices}`);
    return wanted;
  }

  /** The LLM slash commands, answered as text. */
  async command(actor: Actor, source: string, command: '/models' | '/model' | '/cost', args: string): Promise<string> {
    switch (command) {
      case '/models': {
        const list = await this.list(actor, source);
        return modelsText(list.items, list.pinned, source, list.health_scope);
      }
      case '/model': {
        if (args.trim() === '') {
          const pinned = await this.usage.pin({ userId: actor.userId, source });
          return `${pinned ? `Pinned for ${source}: ${pinned}.` : `No pin for ${source}: AUTO.`} Usage: /model <number|name|auto> (see /models).`;
        }
        try {
          const name = await this.pin(actor, source, args);
          return name === 'auto'
            ? `Pin cleared: ${source} uses AUTO (by strength, scope and health).`
            : `Pinned ${name} for ${source}. /model auto clears it.`;
        } catch (e) {
          if (e instanceof RemoteError && e.body.code === 'invalid_input')
            return e.body.message.replace(/^client: /, '');
          throw e;
        }
      }
      case '/cost': {
        const session = await this.sessions.active({ userId: actor.userId, source });
        const [totals, today] = await Promise.all([
          this.usage.sessionTotals({ userId: actor.userId, sessionId: session.id }),
          this.usage.today({ userId: actor.userId }),
        ]);
        return costText(totals, today, this.budget, new Date());
      }
    }
  }

  /** The budget gate, asked before each round: a refusal when today's tokens reached the budget. */
  async admit(userId: string, log: Logger | null = null): Promise<LlmRefusal | null> {
    const budget = this.budget;
    if (budget === null) return null;
    const today = await this.usage.today({ userId });
    if (today.usedTokens < budget) return null;
    (log ?? this.log).info({ userId, used: today.usedTokens, budget }, 'daily token budget exhausted');
    return { code: 'exhausted', message: budgetExhaustedText(budget, today, new Date()) };
  }

  /** Writes one call to the ledger. A failure is logged, never thrown: the answer is already paid for. */
  async record(
    context: LlmCallContext,
    client: string,
    model: string,
    usage: LlmMeteredUsage,
    log: Logger | null = null,
  ): Promise<void> {
    try {
      await this.usage.record({
        userId: context.userId,
        sessionId: context.sessionId,
        frameId: context.frameId,
        messageId: context.messageId,
        purpose: context.purpose,
        client,
        model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cachedInputTokens: usage.cachedInputTokens,
        estimated: usage.estimated,
        costUsd: usage.costUsd,
      });
    } catch (e) {
      (log ?? this.log).warn(
        { userId: context.userId, sessionId: context.sessionId, err: e instanceof Error ? e.message : String(e) },
        'could not record LLM usage',
      );
    }
  }
}
