import { Injectable } from '@nestjs/common';
import type { Actor, AdminBudgetRow, BudgetLimits, BudgetStatus } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { UsersRepository } from '../auth/users.repository';
import { ApiError, callService } from '../http/api-error';

const UNAVAILABLE = 'no session worker is available; retry shortly';

/**
 * Budgets are the session worker's (`budgets.*` on NATS); the gateway checks the user ids an admin
 * sends against its users and names the users of the near-a-limit list.
 */
@Injectable()
export class BudgetsService {
  constructor(
    private readonly bus: Bus,
    private readonly users: UsersRepository,
  ) {}

  mine(actor: Actor): Promise<BudgetStatus> {
    return callService(UNAVAILABLE, () => this.bus.call('budgets.status', { actor, user_id: actor.userId }));
  }

  async ofUser(admin: Actor, userId: string): Promise<BudgetStatus> {
    await this.known(userId);
    return callService(UNAVAILABLE, () => this.bus.call('budgets.status', { actor: admin, user_id: userId }));
  }

  /** `limits` null clears the user's own limits (their groups decide again). */
  async setUser(admin: Actor, userId: string, limits: BudgetLimits | null): Promise<BudgetStatus> {
    await this.known(userId);
    return callService(UNAVAILABLE, () => this.bus.call('budgets.set_user', { actor: admin, user_id: userId, limits }));
  }

  async near(admin: Actor, minPercent: number): Promise<{ items: AdminBudgetRow[] }> {
    const { items } = await callService(UNAVAILABLE, () =>
      this.bus.call('budgets.near', { actor: admin, min_percent: minPercent }),
    );
    const email = new Map((await this.users.findByIds(items.map((i) => i.user_id))).map((u) => [u.id, u.email]));
    return { items: items.map((i) => ({ ...i, email: email.get(i.user_id) ?? null })) };
  }

  private async known(userId: string): Promise<void> {
    const [user] = await this.users.findByIds([userId]);
    if (!user) throw new ApiError('not_found', 'user not found');
  }
}
