import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, Attachment, Delivery, TOPICS } from '@skald/contracts';
import { Bus, RemoteError } from '@skald/messaging';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnDriver } from '../turns/turn-driver';
import { InboxRepository } from './inbox.repository';

export interface Submission {
  actor: Actor;
  source: string;
  clientMessageId: string;
  content: string;
  attachments?: Attachment[];
  delivery: Delivery;
  isSynthetic: boolean;
}

/**
 * A message from a client: committed to the session's inbox (idempotent on the client's id)
 * before it is acknowledged, then the session is driven — here if nobody drives it, otherwise the
 * driver takes it at its next round boundary.
 */
@Injectable()
export class SubmitService {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly inbox: InboxRepository,
    private readonly driver: TurnDriver,
    private readonly bus: Bus,
    private readonly ds: DataSource,
  ) {}

  async submit(
    s: Submission,
  ): Promise<{ session_id: string; message_id: string; client_message_id: string; duplicate: boolean }> {
    const { id: sessionId } = await this.sessions.active({ userId: s.actor.userId, source: s.source });
    const stored = await this.inbox.store({
      userId: s.actor.userId,
      sessionId,
      clientMessageId: s.clientMessageId,
      content: s.content,
      attachments: s.attachments,
      delivery: s.delivery,
      isSynthetic: s.isSynthetic,
    });
    if (!stored.duplicate) this.wake(stored.sessionId);
    return {
      session_id: stored.sessionId,
      message_id: stored.messageId,
      client_message_id: s.clientMessageId,
      duplicate: stored.duplicate,
    };
  }

  /** Try to drive here; ring the doorbell too, in case this worker is draining. */
  wake(sessionId: string): void {
    setImmediate(() => void this.driver.drive(sessionId));
    this.bus.publish(TOPICS.sessionWake.subject(sessionId), TOPICS.sessionWake.message, {
      session_id: sessionId,
      reason: 'input',
    });
  }

  /** `/stop`: recorded on the session row before it is broadcast; answered after the write. */
  async cancel(actor: Actor, sessionId: string): Promise<{ cancelled: boolean }> {
    const session = await this.sessions.find({ userId: actor.userId, sessionId });
    if (!session) throw new RemoteError({ code: 'not_found', message: 'session not found' });
    if (session.turn_state === 'finished') return { cancelled: false };
    await this.ds.query(`UPDATE sessions SET stop_requested_at = now(), updated_at = now() WHERE id = $1`, [sessionId]);
    this.bus.publish(TOPICS.sessionCancel.subject(sessionId), TOPICS.sessionCancel.message, {
      session_id: sessionId,
      reason: 'stop',
    });
    return { cancelled: true };
  }
}
