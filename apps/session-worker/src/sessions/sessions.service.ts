import { Injectable } from '@nestjs/common';
import {
  Actor,
  AdminSessionReply,
  ChatMessages,
  DECISIONS_MAX_CALLS,
  REPLAY_PAGE_BYTES,
  REPLAY_PAGE_EVENTS,
  SessionDetail,
  SessionEvent,
  SessionList,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { ToolCallsRow } from '@skald/persistence';
import { toChatMessage, type CallDecisions } from './chat-history';
import { toSessionDetail, toSessionSummary } from './debug-tree';
import { SessionsRepository } from './sessions.repository';
import { TurnStateRepository } from './turn-state.repository';

const notFound = (): RemoteError => new RemoteError({ code: 'not_found', message: 'session not found' });

/** The actor's role when it is an admin's; anyone else is refused with `forbidden`. */
function adminRole(actor: Actor): 'admin' {
  if (actor.role !== 'admin')
    throw new RemoteError({ code: 'forbidden', message: "only an admin reads another user's conversation" });
  return actor.role;
}

/** Reads of a user's sessions. A foreign id answers exactly like a missing one. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly repo: SessionsRepository,
    private readonly turnState: TurnStateRepository,
    private readonly bus: Bus,
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
    const [frames, messages, calls, discarded] = await Promise.all([
      this.repo.frames(sessionId),
      this.repo.messages(sessionId),
      this.repo.toolCalls(sessionId),
      this.repo.discardedInbox(sessionId),
    ]);
    return toSessionDetail(session, frames, messages, calls, discarded);
  }

  async messages(actor: Actor, source: string, before: string | undefined, limit: number): Promise<ChatMessages> {
    const { id } = await this.repo.active({ userId: actor.userId, source });
    return this.page(actor, { userId: actor.userId, sessionId: id }, before, limit);
  }

  /** Any user's conversation as an admin reads it: its summary and owner. Anyone else: `forbidden`. */
  async adminSummary(actor: Actor, sessionId: string): Promise<AdminSessionReply> {
    const row = await this.repo.findForAdmin({ role: adminRole(actor), sessionId });
    if (!row) throw notFound();
    return { ...toSessionSummary(row), user_id: String(row.user_id) };
  }

  /** Any user's chat history as an admin reads it: the page its owner's `messages` gives. */
  async adminMessages(actor: Actor, sessionId: string, before: string | undefined, limit: number) {
    const row = await this.repo.findForAdmin({ role: adminRole(actor), sessionId });
    if (!row) throw notFound();
    return this.page(actor, { userId: String(row.user_id), sessionId }, before, limit);
  }

  /** One page of a session's chat history, its calls' approvals as the approval service recorded them. */
  private async page(
    actor: Actor,
    scope: { userId: string; sessionId: string },
    before: string | undefined,
    limit: number,
  ): Promise<ChatMessages> {
    const id = scope.sessionId;
    const { rows, calls, hasMore, resumeSeq } = await this.repo.chatPage({ ...scope, before, limit });
    const decisions = await this.decisions(actor, id, calls);
    return {
      items: rows.map((m) =>
        toChatMessage(
          m,
          calls.filter((c) => c.message_id === m.id),
          decisions,
        ),
      ),
      has_more: hasMore,
      session_id: id,
      resume_seq: resumeSeq,
    };
  }

  /**
   * Who answered the approvals of a page's calls, when, where and with what session approval (the
   * approval service's record). Without an answer from it the page still shows how each ended.
   */
  private async decisions(actor: Actor, sessionId: string, calls: readonly ToolCallsRow[]): Promise<CallDecisions> {
    const asked = calls.filter((c) => c.request_id !== null).map((c) => String(c.id));
    if (asked.length === 0) return new Map();
    try {
      const r = await this.bus.call('approval.decisions', {
        actor,
        session_id: sessionId,
        tool_call_ids: asked.slice(0, DECISIONS_MAX_CALLS),
      });
      return new Map(
        r.items.map((i) => [
          i.request_id,
          { ...(i.decision ? { decision: i.decision } : {}), ...(i.preview ? { preview: i.preview } : {}) },
        ]),
      );
    } catch {
      return new Map();
    }
  }

  /**
   * One page of the stored events after `afterSeq` (none without it). The session row is read
   * once: its last seq bounds the page and its turn state is the state as of that seq, so a
   * client's `turn_running` summarises exactly the events replayed before it. A finished turn whose
   * queued input waits for one of the user's turn slots is `waiting: "turn_slot"` with the cap.
   */
  async replay(actor: Actor, sessionId: string, afterSeq: number | undefined) {
    const session = await this.repo.find({ userId: actor.userId, sessionId });
    if (!session) throw notFound();
    const headSeq = Number(session.last_seq);
    const rows =
      afterSeq === undefined || afterSeq >= headSeq
        ? []
        : await this.repo.eventsAfter(sessionId, afterSeq, headSeq, REPLAY_PAGE_EVENTS + 1);
    const events: SessionEvent[] = [];
    let bytes = 0;
    for (const r of rows.slice(0, REPLAY_PAGE_EVENTS)) {
      const event = { ...(r.payload as object), session_id: sessionId, seq: Number(r.seq) } as SessionEvent;
      bytes += Buffer.byteLength(JSON.stringify(event));
      if (events.length > 0 && bytes > REPLAY_PAGE_BYTES) break;
      events.push(event);
    }
    const hasMore = events.length < rows.length;
    if (hasMore) return { events, last_seq: events[events.length - 1].seq, running: true, has_more: true };
    const state = String(session.turn_state);
    // A finished turn whose queued input waits at the user's cap on concurrent turns.
    if (
      state === 'finished' &&
      session.holds_turn_slot !== true &&
      (await this.repo.heldBackByTurnCap({ userId: actor.userId, sessionId }))
    )
      return { events, last_seq: headSeq, running: false, waiting: 'turn_slot' as const, limit: this.repo.maxTurns };
    const awaiting = state === 'finished' ? [] : await this.turnState.awaitingCalls(sessionId);
    const waiting =
      awaiting.length === 0
        ? undefined
        : awaiting.every((c) => c.name === 'ask_user_clarification')
          ? ('clarification' as const)
          : ('approval' as const);
    return {
      events,
      last_seq: headSeq,
      running: state !== 'finished',
      ...(waiting ? { waiting } : {}),
    };
  }
}
