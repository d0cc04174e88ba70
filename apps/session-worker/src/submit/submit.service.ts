import { Injectable } from '@nestjs/common';
import { Actor, Attachment, Delivery, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import { TurnDriver } from '../turns/turn-driver';
import { DeliveryRouting } from '../jobs/delivery-routing.service';
import { InboxRepository } from './inbox.repository';
import { LeaseRepository } from '../lease/lease.repository';

/** A message stored by a path that takes no lease (a new or a named session). */
type StoredWithoutLease = { messageId: string; sessionId: string; duplicate: boolean; lease: null };

export interface Submission {
  actor: Actor;
  source: string;
  clientMessageId: string;
  content: string;
  attachments?: Attachment[];
  delivery: Delivery;
  isSynthetic: boolean;
  /** The conversation named by the client (one of the actor's); absent: the source's active one. */
  sessionId?: string;
}

/**
 * A message from a client: committed to the session's inbox (idempotent on the client's id)
 * before it is acknowledged, then the session is driven — here if nobody drives it, otherwise the
 * driver takes it at its next round boundary. In the common case (an active session whose lease is
 * free) the message's statement also takes the lease for this worker, which drives at once with it
 * (no second statement to ask for the lease, no doorbell).
 */
@Injectable()
export class SubmitService {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly inbox: InboxRepository,
    private readonly driver: TurnDriver,
    private readonly bus: Bus,
    private readonly turnState: TurnStateRepository,
    private readonly routing: DeliveryRouting,
    private readonly leases: LeaseRepository,
  ) {}

  async submit(s: Submission): Promise<{
    session_id: string;
    message_id: string;
    client_message_id: string;
    duplicate: boolean;
    /** This worker took the session's lease with the message (and drives it: its carry is here). */
    leased: boolean;
  }> {
    const stored =
      s.sessionId !== undefined
        ? await this.submitToNamed(s, s.sessionId)
        : ((await this.inbox.submitToActive(
            { userId: s.actor.userId, source: s.source, role: s.actor.role },
            s,
            this.driver.leaseAsk(s.actor.userId),
          )) ?? (await this.submitToNewSession(s)));
    if (!stored.duplicate) {
      try {
        // `interrupt`: stop the running (or parked) turn; the message then starts the next one.
        if (s.delivery === 'interrupt') await this.stop(stored.sessionId);
      } catch (e) {
        // A lease taken with the message and not used is let go at once (not left to expire).
        if (stored.lease) await this.leases.release(stored.lease).catch(() => undefined);
        throw e;
      }
      // Taken with the message: drive with it here, nobody else needs the doorbell; the statement
      // may also have been the first turn's start read (`start`) and its first commit (`start.entered`).
      const { lease } = stored;
      const start = 'start' in stored ? (stored.start ?? null) : null;
      // The echo of a message the statement entered leaves with this answer (one write, at once).
      if (lease && start?.entered) this.driver.announceEntered(start);
      if (lease) setImmediate(() => void this.driver.driveWith(lease, start));
      // This worker still drives the session after the message was committed, and is not draining:
      // its lease's release, a later statement, finds the message and drives on with the history it
      // keeps. No doorbell: a worker of the group answering it could take the lease between that
      // release and this worker's next take, and start the turn with a whole read (carry affinity).
      // Asked now, after the statement: a driver that released before the commit would not see it.
      else if (!this.driver.looksAgain(stored.sessionId)) this.wake(stored.sessionId);
    } else if (stored.lease) {
      // A retry whose first row was committed after the statement's snapshot may still have taken
      // the lease: drive with it (it finds the session's work, or releases it at once).
      const { lease } = stored;
      setImmediate(() => void this.driver.driveWith(lease));
    }
    return {
      session_id: stored.sessionId,
      message_id: stored.messageId,
      client_message_id: s.clientMessageId,
      duplicate: stored.duplicate,
      leased: stored.lease !== null,
    };
  }

  /**
   * The rare case of `submit`: (user, source) has no active session yet — it is created (under the
   * pair's advisory lock), then the role recorded and the message stored, idempotently.
   */
  private async submitToNewSession(s: Submission): Promise<StoredWithoutLease> {
    const { id: sessionId } = await this.sessions.active({ userId: s.actor.userId, source: s.source });
    return this.storeIn(s, sessionId);
  }

  /**
   * A message to a conversation the client names: one of the actor's chat conversations (the
   * sessions the web client lists as conversations), else `not_found` — a job's run (cron, tic,
   * task: not interactive, ephemeral) takes no message from a client.
   */
  private async submitToNamed(s: Submission, sessionId: string): Promise<StoredWithoutLease> {
    const session = await this.sessions.find({ userId: s.actor.userId, sessionId });
    if (!session || !session.is_interactive || session.is_ephemeral)
      throw new RemoteError({ code: 'not_found', message: 'session not found' });
    return this.storeIn(s, sessionId);
  }

  /** The owner's role recorded, then the message stored in the session, idempotently (no lease taken). */
  private async storeIn(s: Submission, sessionId: string): Promise<StoredWithoutLease> {
    await this.turnState.recordOwnerRole(sessionId, s.actor.role);
    const stored = await this.inbox.store({
      userId: s.actor.userId,
      sessionId,
      clientMessageId: s.clientMessageId,
      content: s.content,
      attachments: s.attachments,
      delivery: s.delivery,
      isSynthetic: s.isSynthetic,
    });
    return { ...stored, lease: null };
  }

  /** `session.open`: a new conversation, not the active one of its source, with its earlier history. */
  async open(r: {
    actor: Actor;
    source: string;
    agentId: string;
    systemPrompt: readonly string[];
    history: readonly { role: 'user' | 'assistant'; content: string }[];
  }): Promise<{ session_id: string }> {
    const id = await this.sessions.open({ userId: r.actor.userId, role: r.actor.role, ...r });
    return { session_id: id };
  }

  /**
   * The active session of (user, source). `/new` starts a fresh one: the previous session's
   * unfinished turn is stopped (a session reset ends its waits), system deliveries still queued
   * there move to the home source's conversation, and every socket of that source is told with
   * `new_session`.
   */
  async activeSession(actor: Actor, source: string, createNew: boolean): Promise<{ id: string; created: boolean }> {
    const s = await this.sessions.active({ userId: actor.userId, source }, createNew);
    if (createNew && s.created) {
      if (s.previousId) {
        // Finished tasks' results still waiting there go to the home conversation — before the
        // stop, so that the reset conversation's driver, finishing its stopped turn, finds none
        // of them to start a turn with (one it read before the move is refused by the commit
        // that would enter it: the item is no longer queued in that session).
        const home = await this.routing.rehomeQueued(actor.userId, s.previousId);
        if (await this.stop(s.previousId)) this.wake(s.previousId);
        if (home) this.wake(home);
        // A session reset ends its bypasses and waiting requests.
        await this.bus.call('approval.reset_session', { actor, session_id: s.previousId }).catch(() => undefined);
      }
      this.bus.publish(topicOf('userEvents', actor.userId), {
        type: 'new_session',
        session_id: s.id,
        source,
      });
    }
    return { id: s.id, created: s.created };
  }

  /** Try to drive here; ring the doorbell too, in case this worker is draining. */
  wake(sessionId: string): void {
    setImmediate(() => void this.driver.drive(sessionId));
    this.bus.publish(topicOf('sessionWake', sessionId), {
      session_id: sessionId,
      reason: 'input',
    });
  }

  /** `/stop`: recorded on the session row before it is broadcast; answered after the write. */
  async cancel(actor: Actor, sessionId: string): Promise<{ cancelled: boolean }> {
    const session = await this.sessions.find({ userId: actor.userId, sessionId });
    if (!session) throw new RemoteError({ code: 'not_found', message: 'session not found' });
    const cancelled = await this.stop(sessionId);
    if (cancelled) this.wake(sessionId);
    return { cancelled };
  }

  /** Writes the stop to the session row, then broadcasts it to whichever worker drives the turn. */
  private async stop(sessionId: string): Promise<boolean> {
    if (!(await this.turnState.requestStop(sessionId))) return false;
    this.bus.publish(topicOf('sessionCancel', sessionId), {
      session_id: sessionId,
      reason: 'stop',
    });
    return true;
  }
}
