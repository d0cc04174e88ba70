import { CARRY_TTL_MS } from '@skald/contracts';
import type { CarriedFrame } from './session-cache';

/** Frames' rows carried from one turn of a session to the next, by frame id. */
export type CarriedHistory = ReadonlyMap<string, CarriedFrame>;

/**
 * How many sessions' histories a worker keeps between turns, and how many bytes of text. How long:
 * `CARRY_TTL_MS` (contracts), which the gateway's hints share.
 */
export const CARRY_MAX_SESSIONS = 256;
export const CARRY_MAX_BYTES = 64 * 1024 * 1024;

interface Entry {
  epoch: number;
  userId: string | null;
  frames: CarriedHistory;
  bytes: number;
  at: number;
}

/** A row's weight: its text (UTF-16, two bytes a unit) and a fixed overhead for the object. */
const ROW_OVERHEAD = 256;
function bytesOf(frames: CarriedHistory): number {
  let n = 0;
  for (const f of frames.values()) {
    for (const m of f.messages) n += ROW_OVERHEAD + 2 * (m.content.length + (m.reasoningContent?.length ?? 0));
    for (const c of f.toolCalls)
      n += ROW_OVERHEAD + 2 * (c.argumentsText.length + (c.result?.length ?? 0) + c.name.length);
  }
  return n;
}

/**
 * A session's chat history and tool calls kept by the worker from the end of one turn to the start
 * of the next, so that the next turn's start read does not read (and Postgres does not serialize)
 * the whole conversation again: at 100 turns that read was ~47 ms of Postgres a turn, the one part
 * of a round growing with the conversation.
 *
 * Sound because only a lease holder writes these rows (every write of the store is fenced by the
 * lease's owner and epoch; deleting the session deletes them all, and its id is never reused) and
 * taking a lease always increments its epoch: history kept at the end of a turn under epoch E is
 * still what the tables hold when the next lease taken is E + 1 (no one held the lease between)
 * — or E itself (the next turn under the same lease). Any other epoch and it is dropped. A turn
 * that parked keeps nothing (a parked turn holds no worker memory), nor one that failed: a
 * doubtful commit has already emptied the store's cache.
 *
 * Taken at most once (`take` removes it): the store that takes it owns those rows. Bounded by
 * sessions, bytes and age; the oldest goes first.
 */
export class HistoryCarry {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(
    private readonly maxSessions = CARRY_MAX_SESSIONS,
    private readonly maxBytes = CARRY_MAX_BYTES,
    private readonly ttlMs = CARRY_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The history kept for `sessionId` when it is valid under the lease of `epoch` (see the class); empty otherwise. */
  take(sessionId: string, epoch: number): CarriedHistory {
    const e = this.entries.get(sessionId);
    if (!e) return new Map();
    this.drop(sessionId, e);
    const valid = (e.epoch === epoch || e.epoch + 1 === epoch) && this.now() - e.at <= this.ttlMs;
    return valid ? e.frames : new Map();
  }

  /**
   * The frame ids kept for the sessions of `userId` (the submit's statement, which finds the
   * session by user and source, leaves their rows out of the start read it takes; the driver then
   * checks the carry is valid under the lease it got, see PgSessionStore.startFrom). Bounded by
   * the carry's sessions.
   */
  frameIdsOf(userId: string): string[] {
    const ids: string[] = [];
    for (const e of this.entries.values()) if (e.userId === userId) ids.push(...e.frames.keys());
    return ids;
  }

  /** Keeps the history as of the end of a turn under `epoch`; replaces what was kept for the session. */
  keep(sessionId: string, epoch: number, frames: CarriedHistory, userId: string | null = null): void {
    const old = this.entries.get(sessionId);
    if (old) this.drop(sessionId, old);
    if (frames.size === 0) return;
    const bytes = bytesOf(frames);
    if (bytes > this.maxBytes) return;
    this.entries.set(sessionId, { epoch, userId, frames, bytes, at: this.now() });
    this.bytes += bytes;
    // Oldest first (a Map iterates in insertion order); the loop ends: each pass removes one.
    const cutoff = this.now() - this.ttlMs;
    for (const [id, e] of this.entries) {
      if (this.entries.size <= this.maxSessions && this.bytes <= this.maxBytes && e.at >= cutoff) break;
      this.drop(id, e);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  get heldBytes(): number {
    return this.bytes;
  }

  private drop(sessionId: string, e: Entry): void {
    this.entries.delete(sessionId);
    this.bytes -= e.bytes;
  }
}
