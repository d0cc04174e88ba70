import { Injectable } from '@nestjs/common';
import { Actor, ExportFormat, SessionExport, SessionSearchList, type ReplyDataOf, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import { SubmitService } from '../submit/submit.service';
import { TurnDriver } from '../turns/turn-driver';
import { toChatMessage } from './chat-history';
import { exportFilename, toMarkdown } from './conversation-export';
import { ConversationsRepository } from './conversations.repository';
import { iso } from './row-format';
import { SessionsRepository } from './sessions.repository';

const notFound = (): RemoteError => new RemoteError({ code: 'not_found', message: 'session not found' });

/** How long a delete waits for the conversation's stopped turn to end (polls of `DELETE_POLL_MS`). */
const DELETE_WAIT_POLLS = 80;
const DELETE_POLL_MS = 250;

/**
 * The user's conversations: rename, delete (its turn stopped first), full-text search, export and
 * reopening as the active one. A foreign id answers exactly like a missing one.
 */
@Injectable()
export class ConversationsService {
  constructor(
    private readonly repo: ConversationsRepository,
    private readonly sessions: SessionsRepository,
    private readonly submit: SubmitService,
    private readonly driver: TurnDriver,
    private readonly pins: LlmUsageRepository,
    private readonly bus: Bus,
  ) {}

  async rename(actor: Actor, sessionId: string, title: string): Promise<{ id: string; title: string }> {
    const r = await this.repo.rename({ userId: actor.userId, sessionId }, title.trim());
    if (!r) throw notFound();
    return r;
  }

  /**
   * Stops the conversation's turn (a parked one too: its waits end as cancelled), then deletes the
   * session with every row it owns while holding its lease, so no turn writes meanwhile. When the
   * deleted session was the active one of its source, that source gets a fresh session.
   */
  async delete(actor: Actor, sessionId: string): Promise<{ deleted: boolean }> {
    const scope = { userId: actor.userId, sessionId };
    if (!(await this.sessions.find(scope))) throw notFound();
    await this.submit.cancel(actor, sessionId);
    await this.bus.call('approval.reset_session', { actor, session_id: sessionId }).catch(() => undefined);
    for (let poll = 0; poll < DELETE_WAIT_POLLS; poll++) {
      const done = await this.driver.withLease(sessionId, async () => ({ deleted: await this.repo.delete(scope) }));
      if (done) {
        if (!done.deleted) throw notFound();
        if (done.deleted.wasActive) await this.submit.activeSession(actor, done.deleted.source, true);
        return { deleted: true };
      }
      await new Promise((r) => setTimeout(r, DELETE_POLL_MS));
    }
    throw new RemoteError({ code: 'conflict', message: 'the conversation’s turn did not stop in time; retry' });
  }

  async search(
    actor: Actor,
    q: string,
    source: string | undefined,
    page: number,
    perPage: number,
  ): Promise<SessionSearchList> {
    const { items, total } = await this.repo.search({ userId: actor.userId, q, source, page, perPage });
    return {
      items: items.map((r) => ({
        id: String(r.id),
        source: String(r.source),
        title: typeof r.title === 'string' ? r.title : null,
        snippet: typeof r.snippet === 'string' ? r.snippet : '',
        last_message_at: r.last_message_at ? iso(r.last_message_at) : null,
      })),
      total,
      page,
      per_page: perPage,
    };
  }

  async export(actor: Actor, sessionId: string, format: ExportFormat): Promise<ReplyDataOf<'session.export'>> {
    const session = await this.sessions.find({ userId: actor.userId, sessionId });
    if (!session) throw notFound();
    const { rows, calls } = await this.repo.transcript(sessionId);
    const doc: SessionExport = {
      session: {
        id: sessionId,
        title: typeof session.title === 'string' ? session.title : null,
        source: String(session.source),
        agent_id: String(session.agent_id),
        created_at: iso(session.created_at),
      },
      messages: rows.map((m) =>
        toChatMessage(
          m,
          calls.filter((c) => c.message_id === m.id),
        ),
      ),
    };
    return format === 'json'
      ? { format, filename: exportFilename(doc.session.title, doc.session.created_at, 'json'), content: doc }
      : { format, filename: exportFilename(doc.session.title, doc.session.created_at, 'md'), content: toMarkdown(doc) };
  }

  /**
   * Reopens a conversation as the active one of its source: its remembered model becomes the
   * source's choice again and every socket of that source is told with `new_session`. The
   * conversation that was active stays as it was (a running turn goes on).
   */
  async activate(actor: Actor, sessionId: string): Promise<{ session_id: string; source: string }> {
    const r = await this.repo.activate({ userId: actor.userId, sessionId });
    if (!r) throw notFound();
    if (r.changed) {
      await this.pins.setPin({ userId: actor.userId, source: r.source }, r.clientPin);
      this.bus.publish(topicOf('userEvents', actor.userId), {
        type: 'new_session',
        session_id: sessionId,
        source: r.source,
      });
    }
    return { session_id: sessionId, source: r.source };
  }
}
