import { Injectable, OnModuleInit } from '@nestjs/common';
import type { UserPageReply, UserStandingReply } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { SocketCap } from '../ws/socket-cap';
import { UsersRepository } from './users.repository';

/**
 * `user.standing`: the gateway owns the users table; the scheduler asks at every fire of a job
 * whether its owner may still act and with which role, and walks `user.page` to give every user
 * their periodic tic job, and `user.presence` whether a user has a socket open anywhere (for
 * `turn_finished`); reads, so idempotent.
 */
@Injectable()
export class UserStandingHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly users: UsersRepository,
    private readonly sockets: SocketCap,
  ) {}

  onModuleInit(): void {
    this.bus.handle('user.standing', (r) => this.standing(r.user_id));
    this.bus.handle('user.page', (r) => this.page(r.after ?? null, r.limit));
    this.bus.handle('user.presence', async (r) => ({ online: await this.sockets.online(r.user_id) }));
  }

  async page(after: string | null, limit: number): Promise<UserPageReply> {
    const rows = await this.users.page(after, limit);
    return {
      items: rows.map((u) => ({ user_id: u.id, role: u.role })),
      next: rows.length === limit ? rows[rows.length - 1].id : null,
    };
  }

  async standing(userId: string): Promise<UserStandingReply> {
    const u = await this.users.findById(userId);
    if (!u) return { standing: 'deleted', role: null };
    return { standing: u.disabled ? 'disabled' : 'active', role: u.role, email: u.email };
  }
}
