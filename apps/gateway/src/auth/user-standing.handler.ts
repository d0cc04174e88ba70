import { Injectable, OnModuleInit } from '@nestjs/common';
import type { UserStandingReply } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { UsersRepository } from './users.repository';

/**
 * `user.standing`: the gateway owns the users table; the scheduler asks at every fire of a job
 * whether its owner may still act and with which role (a read, so idempotent).
 */
@Injectable()
export class UserStandingHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly users: UsersRepository,
  ) {}

  onModuleInit(): void {
    this.bus.handle('user.standing', (r) => this.standing(r.user_id));
  }

  async standing(userId: string): Promise<UserStandingReply> {
    const u = await this.users.findById(userId);
    if (!u) return { standing: 'deleted', role: null };
    return { standing: u.disabled ? 'disabled' : 'active', role: u.role };
  }
}
