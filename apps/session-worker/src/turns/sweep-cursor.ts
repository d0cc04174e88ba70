import { FIRST_ID } from '../sessions/sessions.repository';

/**
 * Walks a keyset-paged set of session ids one page a sweep, and starts over after the last page,
 * so every member is visited within ⌈size / page⌉ + 1 sweeps however the set is ordered otherwise.
 */
export class SweepCursor {
  private after = FIRST_ID;

  constructor(private readonly page: number) {}

  async next(fetch: (limit: number, after: string) => Promise<string[]>): Promise<string[]> {
    const ids = await fetch(this.page, this.after);
    this.after = ids.length < this.page ? FIRST_ID : ids[ids.length - 1];
    return ids;
  }
}
