import { InboxItem, nextTurnItem } from '@skald/agent-loop';
import { USER_CAPS } from '@skald/contracts';
import { queryRows } from '@skald/persistence/query-rows';
import type { DataSource } from 'typeorm';
import type { WorkerConfig } from '../config';
import { Lease, SESSION_HAS_WORK } from '../lease/lease.repository';
import type { TurnStart } from '../loop-adapters/session-store/turn-start';
import type { Driving } from './driving';
import type { EventAnnouncer } from './event-announcer';
import { HeldBackNotices } from './held-back-notices';
import type { TurnAnnouncements } from './turn-announcements';
import { TurnSlots } from './turn-slots';

/**
 * Which queued input a driver starts a turn from, and when: the next inbox item of a finished
 * session, admitted only with one of the user's slots (`SKALD_MAX_CONCURRENT_TURNS_PER_USER`);
 * input held back by the cap is told to the session's sockets once, and woken when a slot frees.
 */
export class InboxIntake {
  private readonly slots: TurnSlots;
  /** The held-back inputs told to their sessions' sockets (`turn_waiting`). */
  private readonly heldBack = new HeldBackNotices();

  constructor(
    private readonly ds: DataSource,
    private readonly config: WorkerConfig,
    private readonly announcer: EventAnnouncer,
    private readonly announce: TurnAnnouncements,
  ) {
    this.slots = new TurnSlots(ds);
  }

  /** `SKALD_MAX_CONCURRENT_TURNS_PER_USER`. */
  private get maxTurns(): number {
    return this.config.SKALD_MAX_CONCURRENT_TURNS_PER_USER ?? USER_CAPS.concurrent_turns.default;
  }

  /**
   * What the turn after `start` runs on: `{ next }` — the inbox item a finished session's new
   * turn starts from, or none for a running or parked turn (recovery, a resumed or stopped parked
   * turn never waits for a slot) — or null when there is nothing to do now: no queued input, or
   * the input is held back by the user's cap.
   */
  async admit(d: Driving, start: TurnStart): Promise<{ next: InboxItem | undefined } | null> {
    const { session } = start;
    const sessionId = session.id;
    const next = session.turnState === 'finished' ? nextTurnItem(start.inbox) : undefined;
    if (session.turnState === 'finished' && !next) return null;
    // A new turn from the inbox needs one of the user's slots (recovery, a resumed or stopped
    // parked turn never waits). None: the input stays queued, accepted, for a freed slot's doorbell or the sweep.
    // A failed reservation (the database) holds the turn back too: never the failed-turn path,
    // which could end the turn of an accepted message; the sweep retries.
    const slot = next ? await this.slots.reserve(d.lease, this.maxTurns).catch(() => 'failed' as const) : 'reserved';
    if (slot !== 'reserved') {
      d.cappedAt = performance.now();
      d.log.info({ cap: this.maxTurns, slot }, 'turn held back: the user has the most turns running at once');
      // At the cap (as the reservation's statement found it): the session's sockets are told, once per input here.
      if (slot === 'at_cap' && next && this.heldBack.first(sessionId, next.id))
        this.announcer.heldBack(session.userId, sessionId, next.clientMessageId, this.maxTurns);
      return null;
    }
    return { next };
  }

  /** Gives back a slot reserved under `lease` for a turn that did not start; true when there was one. */
  letGo(lease: Lease): Promise<boolean> {
    return this.slots.letGo(lease);
  }

  /** Rings the doorbell of one session of the user held back by the cap on running turns. */
  async wakeWaiting(userId: string, except: string): Promise<void> {
    const id = await this.slots.waiting(userId, except).catch(() => null);
    if (id !== null) this.announce.ring(id, 'input');
  }

  /** Whether the session has work for a driver (`SESSION_HAS_WORK`; a failed read counts as none). */
  async hasWork(sessionId: string): Promise<boolean> {
    const rows = await queryRows<{ '?column?': number }>(
      this.ds,
      `SELECT 1 FROM sessions s WHERE s.id = $1 AND ${SESSION_HAS_WORK}`,
      [sessionId],
    ).catch(() => []);
    return rows.length > 0;
  }
}
