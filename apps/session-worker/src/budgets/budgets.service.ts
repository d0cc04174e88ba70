import { Inject, Injectable } from '@nestjs/common';
import type { LlmRefusal } from '@skald/agent-loop';
import {
  BUDGET_LIST_MAX,
  type Actor,
  type BudgetLimits,
  type BudgetLimitUse,
  type BudgetStatus,
} from '@skald/contracts';
import { DEFAULT_LLM_TIMEOUT_MS } from '@skald/llm';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { USAGE_WAIT_MS } from '../llm/llm-usage.repository';
import {
  admission,
  limitsInForce,
  percentOf,
  resetsAt,
  usedOn,
  type Limit,
  type OwnerBudget,
  type Used,
} from './budget-rules';
import { busyText, limitUseLine, refusalText } from './budget-texts';
import { BudgetsRepository } from './budgets.repository';

/** How long a call waits, at most, for the user's calls in flight near a limit before it is refused. */
export const BUDGET_WAIT_MS = 20_000;
/** How often it asks again meanwhile. */
export const BUDGET_POLL_MS = 250;
/** A call in flight holds its place this long at most (a worker that died holding it frees it then). */
export const HOLD_TTL_MS = DEFAULT_LLM_TIMEOUT_MS + 60_000;
/** An answered call counts this long at most until its message's commit writes it to the ledger. */
export const SETTLED_TTL_MS = USAGE_WAIT_MS + 60_000;

/** Whether a model call may start: refused with the sentence a user reads, or admitted with its hold (null: no limit). */
export type BudgetAdmission = { kind: 'refused'; refusal: LlmRefusal } | { kind: 'admitted'; hold: string | null };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function forbidden(message: string): RemoteError {
  return new RemoteError({ code: 'forbidden', message });
}

/**
 * Budgets: the limits in force for a user (an admin's for them, else their groups' with a budget,
 * else `SKALD_USER_DAILY_TOKENS`), the admission of each model call against them, shared by every
 * replica through Postgres, and the views of them (a user's own, an admin's near-a-limit list).
 */
@Injectable()
export class BudgetsService {
  constructor(
    private readonly repo: BudgetsRepository,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {}

  private get defaultDailyTokens(): number | null {
    return this.config.SKALD_USER_DAILY_TOKENS > 0 ? this.config.SKALD_USER_DAILY_TOKENS : null;
  }

  limitsOf(owner: OwnerBudget): Limit[] {
    return limitsInForce(owner, this.defaultDailyTokens);
  }

  /**
   * Asked before each model call. A user without a limit is admitted without touching the database
   * (`owner`: what the turn's start read; null: read it now). A limited user's call is admitted in
   * one transaction (BudgetsRepository.admit) by the rule of `admission`; while calls of theirs in
   * flight may take what is left, it asks again every {@link BUDGET_POLL_MS} for at most
   * {@link BUDGET_WAIT_MS}, then is refused.
   */
  async admit(userId: string, owner: OwnerBudget | null, log: Logger | null = null): Promise<BudgetAdmission> {
    const noLimit =
      this.defaultDailyTokens === null && owner !== null && owner.user === null && owner.groups.length === 0;
    if (noLimit) return { kind: 'admitted', hold: null };
    const limits = this.limitsOf(owner ?? (await this.repo.ownerBudget(userId)));
    if (limits.length === 0) return { kind: 'admitted', hold: null };
    const deadline = Date.now() + BUDGET_WAIT_MS;
    for (;;) {
      const r = await this.repo.admit(userId, (s) => admission(limits, s.used, s.held, s.largest), HOLD_TTL_MS);
      const a = r.admission;
      if (a.kind === 'admit') return { kind: 'admitted', hold: r.holdId };
      if (a.kind === 'refuse' || Date.now() + BUDGET_POLL_MS > deadline) {
        const message =
          a.kind === 'refuse'
            ? refusalText(a.limit, a.used, r.snapshot.now)
            : busyText(a.limit, a.used, r.snapshot.now);
        (log ?? this.log).info(
          { userId, dimension: a.limit.dimension, limit: a.limit.limit, used: a.used, waited: a.kind === 'wait' },
          'LLM budget refused a call',
        );
        return { kind: 'refused', refusal: { code: 'exhausted', message } };
      }
      await sleep(BUDGET_POLL_MS);
    }
  }

  /** An admitted call was answered (and written to the ledger, or waiting for its message's commit). Never throws. */
  async settle(
    userId: string,
    holdId: string,
    call: { tokens: number; costUsd: number | null; messageId: string | null },
    log: Logger | null = null,
  ): Promise<void> {
    try {
      await this.repo.settle(
        { userId, holdId },
        { tokens: call.tokens, costUsd: call.costUsd ?? 0, messageId: call.messageId },
        SETTLED_TTL_MS,
      );
    } catch (e) {
      (log ?? this.log).warn(
        { userId, err: e instanceof Error ? e.message : String(e) },
        'could not settle a budget hold',
      );
    }
  }

  /** An admitted call that got no answer: its hold goes (else it expires). Never throws. */
  async release(userId: string, holdId: string, log: Logger | null = null): Promise<void> {
    try {
      await this.repo.release({ userId, holdId });
    } catch (e) {
      (log ?? this.log).warn(
        { userId, err: e instanceof Error ? e.message : String(e) },
        'could not release a budget hold',
      );
    }
  }

  /** `/cost`'s lines about the budget: one per limit in force, or that none is set. */
  async costLines(userId: string, todayTokens: number, now: Date): Promise<string[]> {
    const limits = this.limitsOf(await this.repo.ownerBudget(userId));
    if (limits.length === 0)
      return [`Today (UTC): ${todayTokens.toLocaleString('en-US')} tokens used; no budget is set.`];
    const used = (await this.repo.used([userId])).get(userId)!;
    return limits.map((l) => limitUseLine(l, usedOn(used, l.dimension), now));
  }

  /** A user's budget: their own, or anyone's for an admin. */
  async status(actor: Actor, userId: string): Promise<BudgetStatus> {
    if (actor.role !== 'admin' && actor.userId !== userId) throw forbidden("only an admin reads another user's budget");
    const [owner, used] = await Promise.all([this.repo.ownerBudget(userId), this.repo.used([userId])]);
    return this.statusOf(userId, owner, used.get(userId)!, new Date());
  }

  /** An admin sets (or with null clears) a user's own limits; they apply from the user's next model call. */
  async setUser(actor: Actor, userId: string, limits: BudgetLimits | null): Promise<BudgetStatus> {
    if (actor.role !== 'admin') throw forbidden("only an admin sets a user's budget");
    await this.repo.setUserLimits(userId, limits);
    this.log.info({ userId, by: actor.userId, cleared: limits === null }, 'user budget set');
    return this.status(actor, userId);
  }

  /** An admin's view: users at `minPercent` or more of any limit in force, closest first, at most {@link BUDGET_LIST_MAX}. */
  async near(actor: Actor, minPercent: number): Promise<{ items: BudgetStatus[] }> {
    if (actor.role !== 'admin') throw forbidden('only an admin lists budgets');
    const ids = await this.repo.candidates();
    const [owners, used] = await Promise.all([this.repo.ownerBudgets(ids), this.repo.used(ids)]);
    const now = new Date();
    const items = ids
      .map((id) => this.statusOf(id, owners.get(id)!, used.get(id)!, now))
      .filter((s) => s.limits.some((l) => l.percent >= minPercent))
      .sort((a, b) => top(b) - top(a) || a.user_id.localeCompare(b.user_id))
      .slice(0, BUDGET_LIST_MAX);
    return { items };
  }

  private statusOf(userId: string, owner: OwnerBudget, used: Used, now: Date): BudgetStatus {
    const limits: BudgetLimitUse[] = this.limitsOf(owner).map((l) => {
      const u = usedOn(used, l.dimension);
      return {
        dimension: l.dimension,
        limit: l.limit,
        used: u,
        percent: percentOf(u, l.limit),
        set_by: l.setBy.kind,
        group: l.setBy.kind === 'group' ? l.setBy.name : null,
        resets_at: resetsAt(l.dimension, now).toISOString(),
      };
    });
    return { user_id: userId, user_limits: owner.user, limits };
  }
}

const top = (s: BudgetStatus): number => Math.max(...s.limits.map((l) => l.percent));
