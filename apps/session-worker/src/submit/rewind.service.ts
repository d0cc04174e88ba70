import { Injectable } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnDriver } from '../turns/turn-driver';
import { InboxRepository } from './inbox.repository';
import { SubmitService } from './submit.service';

export interface Rewind {
  actor: Actor;
  source: string;
  clientMessageId: string;
  /** Edit-and-resend: the user message replaced; without it the last user message is answered again. */
  messageId?: string;
  /** The edited text (edit); a regenerate sends the message's own text again. */
  content?: string;
}

type Outcome =
  { kind: 'busy' } | { kind: 'none' } | { kind: 'stored'; messageId: string; duplicate: boolean; sessionId: string };

const BUSY = 'a turn is running in this conversation; wait for it to finish or stop it first';

/**
 * Regenerate and edit-and-resend (PROTOCOL `regenerate`, `edit`). Holding the session's lease (no
 * turn can start meanwhile) the request is checked — no turn running, nothing waiting in the inbox,
 * the message exists — and stored in the durable inbox under the client's id, as a `queue` item
 * (never entered mid-turn) carrying the rewind. The turn it starts carries it out in its first
 * commit (`runTurn`): a regenerate supersedes the rows after the last user message and answers
 * that message again — it is not entered a second time; an edit supersedes the message and every
 * row after it and enters the edited text. Superseded rows stay in the debug tree and are never
 * sent to the model. A retry with the same client id changes nothing twice (`duplicate: true`).
 */
@Injectable()
export class RewindService {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly inbox: InboxRepository,
    private readonly submit: SubmitService,
    private readonly driver: TurnDriver,
  ) {}

  async rewind(
    r: Rewind,
  ): Promise<{ session_id: string; message_id: string; client_message_id: string; duplicate: boolean }> {
    const userId = r.actor.userId;
    const { id: sessionId } = await this.sessions.active({ userId, source: r.source });
    const earlier = await this.inbox.findByClientId({ userId, clientMessageId: r.clientMessageId });
    if (earlier)
      return {
        session_id: earlier.sessionId,
        message_id: earlier.messageId,
        client_message_id: r.clientMessageId,
        duplicate: true,
      };
    const outcome = await this.driver.withLease(sessionId, async (store): Promise<Outcome> => {
      const session = await store.getSession(sessionId);
      if (session.turnState !== 'finished' || (await store.listInbox(sessionId)).length > 0) return { kind: 'busy' };
      const root = (await store.listActiveFrames(sessionId)).find((f) => f.depth === 0);
      if (!root) return { kind: 'none' };
      const rows = await store.listMessages(root.id);
      const users = rows.filter((m) => m.role === 'user' && !m.isSynthetic);
      const target = r.messageId ? users.find((m) => m.id === r.messageId) : users.at(-1);
      if (!target) return { kind: 'none' };
      const stored = await this.inbox.store({
        userId,
        sessionId,
        clientMessageId: r.clientMessageId,
        content: r.content ?? target.content,
        attachments: r.messageId ? (target.attachments ?? undefined) : undefined,
        delivery: 'queue',
        isSynthetic: false,
        rewind: { kind: r.messageId ? 'edit' : 'regenerate', messageId: target.id },
      });
      // A regenerate's ack names the message answered again (the item itself never becomes a row).
      return { kind: 'stored', ...stored, messageId: r.messageId ? stored.messageId : target.id };
    });
    if (outcome === null || outcome.kind === 'busy') throw new RemoteError({ code: 'conflict', message: BUSY });
    if (outcome.kind === 'none')
      throw new RemoteError({
        code: 'not_found',
        message: r.messageId ? 'message not found in this conversation' : 'there is no message to answer again',
        ...(r.messageId ? { field: 'message_id' } : {}),
      });
    this.submit.wake(outcome.sessionId);
    return {
      session_id: outcome.sessionId,
      message_id: outcome.messageId,
      client_message_id: r.clientMessageId,
      duplicate: outcome.duplicate,
    };
  }
}
