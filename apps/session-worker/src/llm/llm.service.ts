import { Inject, Injectable } from '@nestjs/common';
import type { LlmCallContext } from '@skald/agent-loop';
import type { Actor, LlmClientInfo, LlmClientList } from '@skald/contracts';
import { LlmManager, type LlmErrorKind, type LlmMeteredUsage } from '@skald/llm';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Logger } from '@skald/service-kit';
import type { OwnerBudget } from '../budgets/budget-rules';
import { BudgetsService, type BudgetAdmission } from '../budgets/budgets.service';
import { WORKER_LOGGER } from '../config';
import { clientRefusal, noClientRefusal } from '../groups/group-policy';
import { GroupPolicyService } from '../groups/group-policy.service';
import { SessionsRepository } from '../sessions/sessions.repository';
import { costText, modelsText } from './llm-texts';
import { LlmUsageRepository } from './llm-usage.repository';

/** What the LLM port needs besides the manager: the budget gate and the ledger. */
export interface LlmAccounting {
  /**
   * `log`: the caller's logger (a turn's: its lines name the turn); the service's own by default.
   * `owner`: the owner's limits as the turn's start read them (null: read them now). An admitted
   * call of a limited user has a hold: settled by `record`, or given back by `release`.
   */
  admit(userId: string, log?: Logger | null, owner?: OwnerBudget | null): Promise<BudgetAdmission>;
  record(
    context: LlmCallContext,
    client: string,
    model: string,
    usage: LlmMeteredUsage,
    log?: Logger | null,
    hold?: string | null,
  ): Promise<void>;
  /** An admitted call that will not be recorded (it got no answer): its hold goes. */
  release(userId: string, hold: string, log?: Logger | null): Promise<void>;
  /** A call that got no answer (`errorKind`: how it failed); never one the caller aborted. */
  recordFailure(context: LlmCallContext, client: string, errorKind: LlmFailureKind, log?: Logger | null): Promise<void>;
}

/** How a model call failed, as `llm_call_failures` keeps it. */
export type LlmFailureKind = Exclude<LlmErrorKind, 'aborted'> | 'other';

const invalidClient = (message: string): RemoteError =>
  new RemoteError({ code: 'invalid_input', message, field: 'client' });

/**
 * The session worker's LLM features: the client list with shared health and the caller's pin,
 * pins (`select_client`, `/model`), the LLM slash commands, and the accounting of every call
 * (ledger in Postgres, budgets through the BudgetsService).
 */
@Injectable()
export class LlmService implements LlmAccounting {
  constructor(
    private readonly manager: LlmManager,
    private readonly usage: LlmUsageRepository,
    private readonly sessions: SessionsRepository,
    private readonly budgets: BudgetsService,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
    private readonly policies: GroupPolicyService,
  ) {}

  /**
   * The configured clients the caller's groups allow (an admin's too: their turns are held to the
   * same lists), each with its number among all configured clients (what `/model <number>` names).
   */
  async list(actor: Actor, source: string | undefined): Promise<LlmClientList> {
    const [pinned, clients, policy] = await Promise.all([
      source ? this.usage.pin({ userId: actor.userId, source }) : Promise.resolve(null),
      this.manager.list(),
      this.policies.of(actor.userId),
    ]);
    const items: LlmClientInfo[] = clients
      .map((c, i) => ({ c, number: i + 1 }))
      .filter(({ c }) => clientRefusal(policy, c.name) === null)
      .map(({ c, number }) => ({
        number,
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
        vision: c.vision !== null,
        pinned: c.name === pinned,
      }));
    return { items, pinned, health_scope: this.manager.healthMode() };
  }

  /**
   * Pins a client for (user, source) by name or 1-based number, durably; `auto` clears the pin.
   * Returns the pinned name or `auto`. An unknown client is `invalid_input` naming `client`; one
   * the caller's groups do not allow is `forbidden` (the sentence a turn on it would end with), and
   * nothing is pinned.
   */
  async pin(actor: Actor, source: string, wanted: string): Promise<string> {
    const name = this.resolveClient(wanted.trim());
    if (name !== 'auto') await this.policies.requireClient(actor.userId, name);
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
        const [list, policy] = await Promise.all([this.list(actor, source), this.policies.of(actor.userId)]);
        const configured = this.manager.names();
        const refused =
          noClientRefusal(policy, configured) ?? (list.pinned ? clientRefusal(policy, list.pinned) : null);
        return modelsText(list.items, list.pinned, source, list.health_scope, refused?.message ?? null);
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
          if (e instanceof RemoteError && (e.body.code === 'invalid_input' || e.body.code === 'forbidden'))
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
        const now = new Date();
        return costText(totals, await this.budgets.costLines(actor.userId, today.usedTokens, now));
      }
    }
  }

  /** The budget gate, asked before each model call (BudgetsService.admit). */
  admit(userId: string, log: Logger | null = null, owner: OwnerBudget | null = null): Promise<BudgetAdmission> {
    return this.budgets.admit(userId, owner, log);
  }

  release(userId: string, hold: string, log: Logger | null = null): Promise<void> {
    return this.budgets.release(userId, hold, log);
  }

  /** A call outside a turn (a title) was answered and written to the ledger: its hold goes. */
  settle(userId: string, hold: string, call: { tokens: number; costUsd: number | null }): Promise<void> {
    return this.budgets.settle(userId, hold, { ...call, messageId: null });
  }

  /** Writes one failed call. A failure to write is logged, never thrown: the caller has its own error to handle. */
  async recordFailure(
    context: LlmCallContext,
    client: string,
    errorKind: LlmFailureKind,
    log: Logger | null = null,
  ): Promise<void> {
    try {
      await this.usage.recordFailure({
        userId: context.userId,
        sessionId: context.sessionId,
        purpose: context.purpose,
        client,
        model: this.manager.modelOf(client) ?? '',
        errorKind,
      });
    } catch (e) {
      (log ?? this.log).warn(
        { userId: context.userId, sessionId: context.sessionId, err: e instanceof Error ? e.message : String(e) },
        'could not record a failed LLM call',
      );
    }
  }

  /** Writes one call to the ledger. A failure is logged, never thrown: the answer is already paid for. */
  async record(
    context: LlmCallContext,
    client: string,
    model: string,
    usage: LlmMeteredUsage,
    log: Logger | null = null,
    hold: string | null = null,
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
    if (hold)
      await this.budgets.settle(
        context.userId,
        hold,
        {
          tokens: usage.inputTokens + usage.outputTokens,
          costUsd: usage.costUsd,
          // A round's ledger row waits for its message's commit: the hold counts until the message exists.
          messageId: context.purpose === 'round' ? context.messageId : null,
        },
        log,
      );
  }
}
