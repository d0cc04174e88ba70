import { Injectable } from '@nestjs/common';
import { USAGE_EXPORT_USERS_MAX, type Actor, type UsageReport } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { UsersRepository } from '../auth/users.repository';
import { ApiError, callService } from '../http/api-error';

/** What a report is about: a user's usage, or every user's with the `top` users named. */
interface UsageAsk {
  userId: string | null;
  from: string;
  until: string;
  top: number;
}

/**
 * Usage reports, answered by the session workers (which own the ledger) and named here (the
 * gateway owns the users). A user reads their own; the admin routes read anyone's.
 */
@Injectable()
export class UsageService {
  constructor(
    private readonly bus: Bus,
    private readonly users: UsersRepository,
  ) {}

  mine(actor: Actor, from: string, until: string): Promise<UsageReport> {
    return this.report(actor, { userId: actor.userId, from, until, top: 0 });
  }

  /** One user's report for an admin: a user that does not exist is a 404. */
  async ofUser(admin: Actor, userId: string, from: string, until: string): Promise<UsageReport> {
    const [user] = await this.users.findByIds([userId]);
    if (!user) throw new ApiError('not_found', 'user not found');
    return this.report(admin, { userId, from, until, top: 0 });
  }

  overview(admin: Actor, from: string, until: string, top: number): Promise<UsageReport> {
    return this.report(admin, { userId: null, from, until, top });
  }

  /** Every user with calls in the range (most tokens first, at most `USAGE_EXPORT_USERS_MAX`), for an export. */
  everyUser(admin: Actor, from: string, until: string): Promise<UsageReport> {
    return this.report(admin, { userId: null, from, until, top: USAGE_EXPORT_USERS_MAX });
  }

  private async report(actor: Actor, ask: UsageAsk): Promise<UsageReport> {
    const r = await callService('no session worker is available; retry shortly', () =>
      this.bus.call('usage.report', { actor, user_id: ask.userId, from: ask.from, until: ask.until, top: ask.top }),
    );
    const named = new Map((await this.users.findByIds(r.top_users.map((u) => u.user_id))).map((u) => [u.id, u.email]));
    return { ...r, top_users: r.top_users.map((u) => ({ ...u, email: named.get(u.user_id) ?? null })) };
  }
}
