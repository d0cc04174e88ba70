import { Counter, Gauge, Registry } from 'prom-client';
import { ApiError } from '../http/api-error';
import { hashPassword, PasswordCheck, verifyPassword } from './passwords';

/** The password functions a slot lends out (argon2id / legacy scrypt; a test may count or slow them). */
export interface Hashing {
  verify(password: string, stored: string): Promise<PasswordCheck>;
  hash(password: string): Promise<string>;
}

export const REAL_HASHING: Hashing = { verify: verifyPassword, hash: hashPassword };

/** All slots are taken and the queue is full: the work was not run. */
export class SlotsBusy extends Error {
  constructor() {
    super('all password hashing slots and the queue are taken');
    this.name = 'SlotsBusy';
  }
}

/**
 * At most `max` pieces of work at once, at most `queue` more waiting (first come, first served);
 * beyond that `run` throws `SlotsBusy` at once without running anything. A finished piece hands its
 * slot to the oldest waiter, so `running` never exceeds `max`.
 */
export class Slots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly max: number,
    readonly queue: number,
  ) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`slots: max must be a positive integer, got ${max}`);
    if (!Number.isInteger(queue) || queue < 0) throw new Error(`slots: queue must be an integer ≥ 0, got ${queue}`);
  }

  get running(): number {
    return this.active;
  }
  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active < this.max) {
      this.active++;
    } else if (this.waiting.length < this.queue) {
      // the slot is handed over by `release`: `active` stays as it is
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      throw new SlotsBusy();
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export interface PasswordHasherOptions {
  maxConcurrent: number;
  queue: number;
  registry: Registry;
  /** The real argon2id / scrypt functions unless a test passes counting ones. */
  hashing?: Hashing;
}

/**
 * Every password hash the gateway computes (login checks, the dummy check for unknown emails,
 * rehashes, password changes, accounts created by admins) runs in one of a bounded number of
 * slots, so that a burst of requests cannot queue unbounded argon2id work (19 MiB each) on the
 * thread pool. A request finding every slot and the queue taken is answered 503 `unavailable`
 * with Retry-After at once, nothing hashed.
 */
export class PasswordHasher {
  private readonly slots: Slots;
  private readonly hashing: Hashing;
  private readonly checks: Counter;
  private readonly hashes: Counter;
  private readonly refused: Counter;

  constructor(options: PasswordHasherOptions) {
    this.slots = new Slots(options.maxConcurrent, options.queue);
    this.hashing = options.hashing ?? REAL_HASHING;
    const registers = [options.registry];
    this.checks = new Counter({
      name: 'skald_login_password_checks_total',
      help: 'Passwords checked against a stored hash (logins, password changes; unknown emails against a dummy hash)',
      registers,
    });
    this.hashes = new Counter({
      name: 'skald_password_hashes_total',
      help: 'New password hashes computed (password changes, rehashes of weaker hashes, accounts created)',
      registers,
    });
    this.refused = new Counter({
      name: 'skald_login_hash_busy_total',
      help: 'Requests refused (503) because every password hashing slot and the queue were taken',
      registers,
    });
    const slots = this.slots;
    new Gauge({
      name: 'skald_login_hashes_in_flight',
      help: 'Password hashing slots in use on this gateway',
      registers,
      collect() {
        this.set(slots.running);
      },
    });
  }

  /**
   * Runs `work` holding a slot; the `Hashing` it gets works only until `work` ends.
   * Throws 503 `unavailable` (Retry-After 1 s) when every slot and the queue are taken.
   */
  async withSlot<T>(work: (h: Hashing) => Promise<T>): Promise<T> {
    try {
      return await this.slots.run(async () => {
        let live = true;
        const inSlot = <A extends unknown[], R>(fn: (...a: A) => Promise<R>, counter: Counter) => {
          return (...a: A): Promise<R> => {
            if (!live) return Promise.reject(new Error('a password hash outside its slot'));
            counter.inc();
            return fn(...a);
          };
        };
        const h: Hashing = {
          verify: inSlot(this.hashing.verify.bind(this.hashing), this.checks),
          hash: inSlot(this.hashing.hash.bind(this.hashing), this.hashes),
        };
        try {
          return await work(h);
        } finally {
          live = false;
        }
      });
    } catch (e) {
      if (!(e instanceof SlotsBusy)) throw e;
      this.refused.inc();
      throw new ApiError('unavailable', 'too many logins at once on this server; try again in 1 s', undefined, 1);
    }
  }
}
