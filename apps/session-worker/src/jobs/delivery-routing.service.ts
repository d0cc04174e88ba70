import { Injectable } from '@nestjs/common';
import { SessionsRepository } from '../sessions/sessions.repository';
import { UserSettingsRepository } from '../settings/user-settings.repository';
import { JobSessionsRepository } from './job-sessions.repository';

/**
 * Where a system delivery (a finished task's `task_completed`, a notification) goes when the
 * conversation that should take it was reset (`/new`): the active session of the user's home
 * source (`/sethome`), so it is never left in a conversation nobody sees.
 */
@Injectable()
export class DeliveryRouting {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly settings: UserSettingsRepository,
    private readonly repo: JobSessionsRepository,
  ) {}

  /** The active session of the user's home source (created on first use). */
  async homeSession(userId: string): Promise<string> {
    const source = await this.settings.homeSource({ userId });
    return (await this.sessions.active({ userId, source })).id;
  }

  /**
   * A reset session's deliveries still queued move to the home conversation; returns it when any
   * moved (the caller wakes it), else null.
   */
  async rehomeQueued(userId: string, resetSessionId: string): Promise<string | null> {
    const home = await this.homeSession(userId);
    if (home === resetSessionId) return null;
    const moved = await this.repo.moveQueuedDeliveries({ userId, fromSessionId: resetSessionId, toSessionId: home });
    return moved > 0 ? home : null;
  }
}
