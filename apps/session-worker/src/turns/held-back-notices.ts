/** Held-back inputs remembered at most; beyond, the oldest is forgotten (and may be told again). */
export const HELD_BACK_KEPT = 10_000;

/**
 * Which held-back input of each session this worker has told the session's sockets about
 * (`turn_waiting`): a driver that finds the same input still waiting at the cap — a doorbell, each
 * sweep pass — tells nothing more; another input of the session is told once too. Each worker
 * remembers its own, so an input is told at most once per worker that holds it back.
 */
export class HeldBackNotices {
  /** Session id → the id of the inbox item told. Insertion order, oldest first. */
  private readonly told = new Map<string, string>();

  constructor(private readonly kept = HELD_BACK_KEPT) {}

  /** True the first time `inputId` of the session is held back here (remembered from then on). */
  first(sessionId: string, inputId: string): boolean {
    if (this.told.get(sessionId) === inputId) return false;
    this.told.delete(sessionId);
    this.told.set(sessionId, inputId);
    if (this.told.size > this.kept) this.told.delete(this.told.keys().next().value as string);
    return true;
  }

  /** Sessions remembered now (for tests). */
  get size(): number {
    return this.told.size;
  }
}
