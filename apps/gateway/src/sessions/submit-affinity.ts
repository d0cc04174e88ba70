import { LRUCache } from 'lru-cache';
import { CARRY_TTL_MS, ROUTE_TOKEN } from '@skald/contracts';
import { BusRequestError } from '@skald/messaging/bus-errors';

/** How many conversations the gateway remembers a worker for (the least recently used goes first). */
export const AFFINITY_MAX_CONVERSATIONS = 10_000;

/**
 * Carry affinity: which session worker took a conversation's lease last (the route its submit's
 * reply named), so that the conversation's next `session.submit` goes to that worker's own subject,
 * where the history is still in memory (HistoryCarry), instead of to a random worker of the queue
 * group, which would read the whole history again.
 *
 * Soft state, bounded by count and by age (a hint older than the worker's carry points at nothing):
 * any worker takes any submit (the lease row and its epoch decide who drives), so a wrong, stale or
 * lost hint costs one start read, never a message. A hinted worker that does not answer (dead: no
 * responders; stuck: timeout) is forgotten and the submit goes to the queue group as without a
 * hint; the submit is idempotent on the client's message id, so a message the hinted worker did
 * store before the timeout is answered `duplicate` with the same message id, not entered twice.
 */
export class SubmitAffinity {
  private readonly hints: LRUCache<string, string>;

  constructor(opts: { max?: number; ttlMs?: number; now?: () => number } = {}) {
    const now = opts.now;
    this.hints = new LRUCache<string, string>({
      max: opts.max ?? AFFINITY_MAX_CONVERSATIONS,
      ttl: opts.ttlMs ?? CARRY_TTL_MS,
      ...(now ? { perf: { now }, ttlResolution: 0 } : {}),
    });
  }

  /** The route of the worker last named for (user, source), if it is still fresh. */
  routeOf(userId: string, source: string): string | undefined {
    return this.hints.get(keyOf(userId, source));
  }

  get size(): number {
    return this.hints.size;
  }

  /**
   * Sends one submit of (user, source): to the hinted worker first when there is one, then — when
   * that worker answers no one in time — to the queue group. `send(to)` sends to a route (or to the
   * queue group without one). The reply's `worker` becomes the hint; a reply without it (the worker
   * that answered does not drive the session) leaves the hint as it was.
   */
  async submit<R extends { worker?: string }>(
    userId: string,
    source: string,
    send: (to?: string) => Promise<R>,
  ): Promise<R> {
    const key = keyOf(userId, source);
    const hint = this.hints.get(key);
    let reply: R | undefined;
    if (hint !== undefined) {
      try {
        reply = await send(hint);
      } catch (e) {
        if (!(e instanceof BusRequestError) || (e.code !== 'no_responders' && e.code !== 'timeout')) throw e;
        // A hint is only worth a hinted worker that answers.
        if (this.hints.get(key) === hint) this.hints.delete(key);
      }
    }
    reply ??= await send();
    // Only a route a subject can carry: anything else would fail this conversation's next send
    // before its fallback, for as long as the hint lived.
    if (reply.worker !== undefined && ROUTE_TOKEN.test(reply.worker)) this.hints.set(key, reply.worker);
    return reply;
  }
}

/** One key per conversation: the user and the source (NUL cannot occur in a user id). */
const keyOf = (userId: string, source: string): string => `${userId}\u0000${source}`;
