/** At most this many facts are remembered per turn (a turn asks a handful). */
const MAX_FACTS = 32;

/**
 * Facts a turn asks of other services that do not change within the turn by themselves (the tools
 * visible to the agent, the memory context of the user's message): each is asked once under its
 * key and remembered until a call of the turn that may have written something (not read-only)
 * ends, since a write can change the answer (a memory document, an activated MCP server). A
 * failed ask is not remembered. One instance per turn: a new turn asks again.
 */
export class TurnFacts {
  private readonly memo = new Map<string, Promise<unknown>>();

  /** A call that may have written something ended: every fact is asked again. */
  changed(): void {
    this.memo.clear();
  }

  /** Whether the fact under `key` is known or being asked. */
  has(key: string): boolean {
    return this.memo.has(key);
  }

  get<T>(key: string, ask: () => Promise<T>): Promise<T> {
    const known = this.memo.get(key);
    if (known) return known as Promise<T>;
    if (this.memo.size >= MAX_FACTS) this.memo.clear();
    const value = ask();
    this.memo.set(key, value);
    value.catch(() => {
      if (this.memo.get(key) === value) this.memo.delete(key);
    });
    return value;
  }
}
