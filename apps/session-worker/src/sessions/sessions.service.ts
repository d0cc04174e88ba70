import { Injectable } from '@nestjs/common';
import { Actor, ChatMessages, SessionDetail, SessionEvent, SessionList } from '@skald/contracts';
import { RemoteError } from '@skald/messaging';
import { toChatMessage } from './chat-history';
import { toSessionDetail, toSessionSummary } from './debug-tree';
import { SessionsRepository } from './sessions.repository';
import { TurnStateRepository } from './turn-state.repository';

const notFound = (): RemoteError => new RemoteError({ code: 'not_found', message: 'session not found' });

/** Reads of a user's sessions. A foreign id answers exactly like a missing one. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly repo: SessionsRepository,
    private readonly turnState: TurnStateRepository,
  ) {}

  active(actor: Actor, source: string, createNew: boolean): Promise<{ id: string; created: boolean }> {
    return this.repo.active({ userId: actor.userId, source }, createNew);
  }

  async list(actor: Actor, source: string | undefined, page: number, perPage: number): Promise<SessionList> {
    const { items, total } = await this.repo.list({ userId: actor.userId, source, page, perPage });
    return { items: items.map(toSessionSummary), total, page, per_page: perPage };
  }

  async detail(actor: Actor, sessionId: string): Promise<SessionDetail> {
    const session = await this.repo.find({ userId: actor.userId, sessionId });
    if (!session) throw notFound();
    const [frames, messages, calls] = await Promise.all([
      this.repo.frames(sessionId),
      this.repo.messages(sessionId),
      this.repo.toolCalls(sessionId),
    ]);
    return toSessionDetail(session, frames, messages, calls);
  }

  async messages(actor: Actor, source: string, before: string | undefined, limit: number): Promise<ChatMessages> {
    const { id } = await this.repo.active({ userId: actor.userId, source });
    const { rows, calls, hasMore } = await this.repo.chatPage({ userId: actor.userId, sessionId: id, before, limit });
    return {
      items: rows.map((m) =>
        toChatMessage(
          m,
          calls.filter((c) => c.message_id === m.id),
        ),
      ),
      has_more: hasMore,
    };
  }

  /** Stored events after `afterSeq` (none without it), the turn state and the last seq. */
  async replay(actor: Actor, sessionId: string, afterSeq: number | undefined) {
    const session = await this.repo.find({ userId: actor.userId, sessionId });
    if (!session) throw notFound();
    const rows = afterSeq === undefined ? [] : await this.repo.eventsAfter(sessionId, afterSeq);
    const events = rows.map(
      (r) => ({ ...(r.payload as object), session_id: sessionId, seq: Number(r.seq) }) as SessionEvent,
    );
    const state = String(session.turn_state);
    const awaiting = state === 'finished' ? [] : await this.turnState.awaitingCalls(sessionId);
    const waiting =
      awaiting.length === 0
        ? undefined
        : awaiting.every((c) => c.name === 'ask_user_clarification')
          ? ('clarification' as const)
          : ('approval' as const);
    const lastSeq =
      events.length > 0 ? Math.max(Number(session.last_seq), events[events.length - 1].seq) : Number(session.last_seq);
    return {
      events,
      last_seq: lastSeq,
      running: state !== 'finished',
      ...(waiting ? { waiting } : {}),
    };
  }
}
