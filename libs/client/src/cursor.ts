/** A session event's place: which session it is of and its `seq` there. */
export interface Sequenced {
  readonly session_id: string;
  readonly seq: number;
}

/**
 * What the cursor makes of a session event: `deliver` it (the next one, `seq` = last + 1); drop it
 * as a `duplicate` (at or below the cursor), as `foreign` (another session than the one followed),
 * or as a `gap` (past the next one: events in between are missing, and a resume replays them all);
 * or `hold` it while the session's start is being read (a history page).
 */
export type Verdict = 'deliver' | 'duplicate' | 'foreign' | 'gap' | 'hold';

/**
 * The replay cursor of one followed session: the last `seq` delivered, and a session start being
 * read. Events reach the user contiguous and each once; a gap asks the connection to resume from
 * the cursor, which the server answers with every event after it, in order.
 */
export class SeqCursor {
  sessionId: string | null = null;
  lastSeq = 0;
  /** Events that came while the session's start is read (null: not reading). */
  private held: Sequenced[] | null = null;

  /** Follows `sessionId` from its start: nothing of it seen yet; its events wait until `started`. */
  begin(sessionId: string): void {
    this.sessionId = sessionId;
    this.lastSeq = 0;
    this.held = [];
  }

  /** The start is read: the cursor is at `from`; the held events come back in order, each with its verdict. */
  started<T extends Sequenced>(from: number): Array<{ event: T; verdict: Verdict }> {
    const held = (this.held ?? []) as T[];
    this.held = null;
    this.lastSeq = from;
    return held.sort((a, b) => a.seq - b.seq).map((event) => ({ event, verdict: this.check(event) }));
  }

  get reading(): boolean {
    return this.held !== null;
  }

  /** The reading was abandoned (the socket closed): nothing is held. */
  abandon(): void {
    this.held = null;
  }

  /** The verdict on one session event; a delivered one moves the cursor. */
  check(e: Sequenced): Verdict {
    if (e.session_id !== this.sessionId) return 'foreign';
    if (this.held) {
      this.held.push(e);
      return 'hold';
    }
    if (e.seq <= this.lastSeq) return 'duplicate';
    if (e.seq !== this.lastSeq + 1) return 'gap';
    this.lastSeq = e.seq;
    return 'deliver';
  }
}
