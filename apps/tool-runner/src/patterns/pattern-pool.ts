import { Inject, Injectable, OnModuleDestroy, Optional } from '@nestjs/common';
import { Worker } from 'node:worker_threads';

/**
 * Runs model-supplied patterns (grep_files' regex and glob) off the event loop: RE2 semantics
 * (re2js, linear in the input's length, no backreferences or lookaround) in a bounded pool of
 * worker threads, each with a heap limit, every job with a deadline after which its worker is
 * terminated, and at most `perUser` running jobs of one user (the rest of that user's jobs wait, at
 * most `queuedPerUser` of them), so one user's searches never occupy every worker.
 */

export interface PatternPoolOptions {
  /** Worker threads (at most this many jobs run at once). */
  workers: number;
  /** A job's deadline, waiting for a worker included. */
  timeoutMs: number;
  /** Heap limit of one worker (old generation), in MiB. */
  memoryMb: number;
  /** Jobs of one user running at once. */
  perUser: number;
  /** Jobs of one user waiting for a worker; one more is refused at once. */
  queuedPerUser: number;
}

export const DEFAULT_PATTERN_POOL: PatternPoolOptions = {
  workers: 2,
  timeoutMs: 1500,
  memoryMb: 256,
  perUser: 1,
  queuedPerUser: 4,
};

export const PATTERN_POOL_OPTIONS = Symbol('PATTERN_POOL_OPTIONS');

/** Matching lines reported per job at most; past it the search says it stopped early. */
export const MAX_LINE_HITS = 1_000_000;

export type PatternFailureKind = 'syntax' | 'timeout' | 'busy' | 'memory' | 'crashed' | 'cancelled';

export class PatternFailure extends Error {
  constructor(
    readonly kind: PatternFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'PatternFailure';
  }
}

export interface LineHits {
  /** Per text, the 0-based indexes of matching lines (a trailing `\r` is not part of a line). */
  hits: number[][];
  /** More than MAX_LINE_HITS lines matched: the rest were not recorded. */
  truncated: boolean;
}

type Job =
  | { kind: 'paths'; source: string; subjects: string[] }
  | { kind: 'lines'; source: string; caseSensitive: boolean; texts: Uint8Array[]; maxHits: number };

interface Pending {
  id: number;
  userId: string;
  job: Job;
  resolve(value: unknown): void;
  reject(e: PatternFailure): void;
  timer: NodeJS.Timeout;
  /** `performance.now()` at which its time is up, waiting included. */
  deadline: number;
  /** Ends it, out of time: `timeout` when it started within the first half of that time, else `busy`. */
  expire(): void;
  slot: Slot | null;
  startedAt: number | null;
  cleanup(): void;
}

interface Slot {
  worker: Worker | null;
  current: Pending | null;
}

@Injectable()
export class PatternPool implements OnModuleDestroy {
  private readonly opts: PatternPoolOptions;
  private readonly slots: Slot[];
  private readonly queue: Pending[] = [];
  private readonly running = new Map<string, number>();
  private nextId = 1;

  constructor(@Optional() @Inject(PATTERN_POOL_OPTIONS) opts?: Partial<PatternPoolOptions>) {
    this.opts = { ...DEFAULT_PATTERN_POOL, ...opts };
    this.slots = Array.from({ length: Math.max(1, this.opts.workers) }, () => ({ worker: null, current: null }));
  }

  get options(): Readonly<PatternPoolOptions> {
    return this.opts;
  }

  /** Indexes of the subjects the anchored RE2 expression matches. */
  async matchingSubjects(userId: string, source: string, subjects: string[], signal?: AbortSignal): Promise<number[]> {
    return (await this.submit(userId, { kind: 'paths', source, subjects }, signal)) as number[];
  }

  /** Matching lines of each text (UTF-8 bytes, best on SharedArrayBuffers: shared, not copied). */
  async matchingLines(
    userId: string,
    source: string,
    caseSensitive: boolean,
    texts: Uint8Array[],
    signal?: AbortSignal,
  ): Promise<LineHits> {
    return (await this.submit(
      userId,
      { kind: 'lines', source, caseSensitive, texts, maxHits: MAX_LINE_HITS },
      signal,
    )) as LineHits;
  }

  async onModuleDestroy(): Promise<void> {
    const stopping = new PatternFailure('cancelled', 'the tool runner is shutting down');
    for (const p of [...this.queue]) this.fail(p, stopping);
    const workers = this.slots.flatMap((s) => {
      const worker = s.worker;
      if (s.current) this.fail(s.current, stopping);
      return worker ? [worker] : [];
    });
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private submit(userId: string, job: Job, signal?: AbortSignal): Promise<unknown> {
    if (signal?.aborted) return Promise.reject(new PatternFailure('cancelled', 'cancelled'));
    const queued = this.queue.filter((p) => p.userId === userId).length;
    if (queued >= this.opts.queuedPerUser)
      return Promise.reject(
        new PatternFailure(
          'busy',
          `${queued} searches of yours are already waiting for a free search worker; wait for them to finish`,
        ),
      );
    return new Promise((resolve, reject) => {
      const onAbort = (): void => this.fail(pending, new PatternFailure('cancelled', 'cancelled'));
      const pending: Pending = {
        id: this.nextId++,
        userId,
        job,
        resolve,
        reject,
        slot: null,
        startedAt: null,
        deadline: performance.now() + this.opts.timeoutMs,
        expire: () => {
          const secs = `${this.opts.timeoutMs / 1000} s`;
          // Out of time mostly waiting for a worker is the runner being busy, not the search being
          // slow. Judged by when it started, not by how long it seems to have run: a stalled event
          // loop fires the timer late, and a job started at the end of its time would look slow.
          const waited = (pending.startedAt ?? performance.now()) - (pending.deadline - this.opts.timeoutMs);
          this.fail(
            pending,
            waited < this.opts.timeoutMs / 2
              ? new PatternFailure('timeout', `the search took longer than ${secs} and was stopped`)
              : new PatternFailure(
                  'busy',
                  `no search worker became free within ${secs} (the runner is busy); try again shortly`,
                ),
          );
        },
        timer: setTimeout(() => pending.expire(), this.opts.timeoutMs),
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(pending);
      this.dispatch();
    });
  }

  /** Starts queued jobs on idle workers, oldest first, skipping users at their running cap. */
  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.current) continue;
      const i = this.queue.findIndex((p) => (this.running.get(p.userId) ?? 0) < this.opts.perUser);
      if (i === -1) return;
      const [pending] = this.queue.splice(i, 1);
      if (performance.now() >= pending.deadline) {
        // Its time ran out while it waited (a stalled event loop fires timers late): never start
        // it. expire → settle → dispatch goes on with the rest of the queue.
        pending.expire();
        return;
      }
      slot.current = pending;
      pending.slot = slot;
      pending.startedAt = performance.now();
      this.running.set(pending.userId, (this.running.get(pending.userId) ?? 0) + 1);
      const worker = slot.worker ?? this.spawn(slot);
      worker.postMessage({ id: pending.id, job: pending.job });
    }
  }

  private spawn(slot: Slot): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { re2js: require.resolve('re2js') },
      resourceLimits: { maxOldGenerationSizeMb: this.opts.memoryMb, maxYoungGenerationSizeMb: 16 },
    });
    slot.worker = worker;
    // A terminated worker's late events are ignored: its slot may run another job by then.
    worker.on('message', (m: { id: number; result?: unknown; syntax?: string }) => {
      if (slot.worker !== worker) return;
      const p = slot.current;
      if (!p || p.id !== m.id) return;
      if (m.syntax !== undefined) this.settle(p, () => p.reject(new PatternFailure('syntax', m.syntax as string)));
      else this.settle(p, () => p.resolve(m.result));
    });
    worker.on('error', (e: Error & { code?: string }) => {
      if (slot.worker !== worker) return;
      slot.worker = null;
      const p = slot.current;
      if (!p) return;
      this.settle(p, () =>
        p.reject(
          e.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new PatternFailure('memory', `the search needed more than ${this.opts.memoryMb} MiB and was stopped`)
            : new PatternFailure('crashed', `the search failed: ${e.message}`),
        ),
      );
    });
    worker.on('exit', () => {
      if (slot.worker !== worker) return;
      slot.worker = null;
      const p = slot.current;
      if (p) this.settle(p, () => p.reject(new PatternFailure('crashed', 'the search worker stopped')));
    });
    // After the listeners: adding a 'message' listener refs the worker again. An idle pool keeps no
    // process alive; a running job does, through its deadline timer.
    worker.unref();
    return worker;
  }

  /** Ends a job that is queued or running; a running one's worker is terminated (it may be mid-match). */
  private fail(p: Pending, e: PatternFailure): void {
    const slot = p.slot;
    if (slot && slot.current === p) {
      const worker = slot.worker;
      slot.worker = null;
      if (worker) void worker.terminate();
    }
    this.settle(p, () => p.reject(e));
  }

  private settle(p: Pending, answer: () => void): void {
    clearTimeout(p.timer);
    p.cleanup();
    const queued = this.queue.indexOf(p);
    if (queued !== -1) this.queue.splice(queued, 1);
    const slot = p.slot;
    if (slot && slot.current === p) {
      slot.current = null;
      const n = (this.running.get(p.userId) ?? 1) - 1;
      if (n > 0) this.running.set(p.userId, n);
      else this.running.delete(p.userId);
    }
    answer();
    this.dispatch();
  }
}

/** The worker: compiles with re2js (a syntax error is an answer, not a crash) and matches. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { RE2JS } = require(workerData.re2js);
parentPort.on('message', ({ id, job }) => {
  let re;
  try {
    re = RE2JS.compile(job.source, job.kind === 'lines' && !job.caseSensitive ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (e) {
    // The case-insensitive flag is not part of what the caller wrote.
    parentPort.postMessage({ id, syntax: String((e && e.message) || e).split('\`(?i)').join('\`') });
    return;
  }
  if (job.kind === 'paths') {
    const hits = [];
    for (let i = 0; i < job.subjects.length; i++) if (re.test(job.subjects[i])) hits.push(i);
    parentPort.postMessage({ id, result: hits });
    return;
  }
  let left = job.maxHits;
  let truncated = false;
  const hits = job.texts.map((bytes) => {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    const mine = [];
    let start = 0;
    for (let n = 0; start < text.length && !truncated; n++) {
      let end = text.indexOf('\\n', start);
      if (end === -1) end = text.length;
      const cut = end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
      if (re.test(text.slice(start, cut))) {
        if (left-- <= 0) truncated = true;
        else mine.push(n);
      }
      start = end + 1;
    }
    return mine;
  });
  parentPort.postMessage({ id, result: { hits, truncated } });
});
`;
