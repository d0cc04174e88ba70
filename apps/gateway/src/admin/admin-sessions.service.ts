import { Inject, Injectable } from '@nestjs/common';
import type { Actor, AdminSessionDto, ChatMessages } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import { loggerWithIds } from '@skald/service-kit/log-ids';
import { UsersRepository } from '../auth/users.repository';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError, callService } from '../http/api-error';
import { GATEWAY_LOGGER } from '../tokens';
import { AdminSessionReadsRepository, type AdminSessionRead } from './admin-session-reads.repository';

/** The 403 of an admin's read while `SKALD_ADMIN_CHAT_ACCESS=off`. */
export const ADMIN_CHAT_ACCESS_OFF =
  "Reading other users' conversations is turned off on this server (SKALD_ADMIN_CHAT_ACCESS=off).";

/**
 * An admin's read-only view of any user's conversation. Nothing here writes to a conversation:
 * every write route keeps its owner-only check. Each read of another user's conversation is
 * recorded before its answer leaves the gateway: an answer whose record failed is not sent.
 */
@Injectable()
export class AdminSessionsService {
  private readonly allowed: boolean;

  constructor(
    private readonly bus: Bus,
    private readonly users: UsersRepository,
    private readonly reads: AdminSessionReadsRepository,
    @Inject(GATEWAY_CONFIG) config: Pick<GatewayConfig, 'SKALD_ADMIN_CHAT_ACCESS'>,
    @Inject(GATEWAY_LOGGER) private readonly log: Logger,
  ) {
    this.allowed = config.SKALD_ADMIN_CHAT_ACCESS === 'on';
  }

  async summary(admin: Actor, sessionId: string): Promise<AdminSessionDto> {
    this.refuseWhenOff();
    const { user_id, ...summary } = await this.call(() =>
      this.bus.call('session.admin.get', { actor: admin, session_id: sessionId }),
    );
    await this.record(admin, user_id, sessionId, 'session');
    const [owner] = await this.users.findByIds([user_id]);
    return { ...summary, owner: { id: user_id, email: owner?.email ?? null } };
  }

  async messages(admin: Actor, sessionId: string, before: string | undefined, limit: number): Promise<ChatMessages> {
    this.refuseWhenOff();
    const owner = await this.call(() => this.bus.call('session.admin.get', { actor: admin, session_id: sessionId }));
    const page = await this.call(() =>
      this.bus.call('session.admin.messages', { actor: admin, session_id: sessionId, before, limit }),
    );
    await this.record(admin, owner.user_id, sessionId, 'messages');
    return page;
  }

  private refuseWhenOff(): void {
    if (!this.allowed) throw new ApiError('forbidden', ADMIN_CHAT_ACCESS_OFF);
  }

  /** An admin reading their own conversation is not recorded: only reads of someone else's. */
  private async record(admin: Actor, ownerUserId: string, sessionId: string, read: AdminSessionRead['read']) {
    if (ownerUserId === admin.userId) return;
    await this.reads.record({ adminUserId: admin.userId, ownerUserId, sessionId, read });
    loggerWithIds(this.log, { userId: admin.userId, sessionId }).info(
      { ownerUserId, read },
      "an admin read another user's conversation",
    );
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('no session worker is available; retry shortly', fn);
  }
}
