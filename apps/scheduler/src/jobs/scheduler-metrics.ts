import { Gauge, Registry } from 'prom-client';

/** The BullMQ states whose job counts the gauge shows. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];
export type QueueCounts = Record<QueueState, number>;

/** How long a scrape waits for Redis before it leaves the queue out (a slow Redis never hangs /metrics). */
export const QUEUE_COUNT_TIMEOUT_MS = 1_000;

/**
 * Prometheus metrics of the scheduler. `skald_scheduler_queue_jobs{queue,state}` is read from
 * BullMQ on each scrape; when Redis does not answer in time the queue's series are left out of
 * that scrape (absent, not stale).
 */
export class SchedulerMetrics {
  private readonly queues = new Map<string, () => Promise<QueueCounts>>();

  constructor(registry: Registry, timeoutMs = QUEUE_COUNT_TIMEOUT_MS) {
    const queues = this.queues;
    new Gauge({
      name: 'skald_scheduler_queue_jobs',
      help: 'Jobs in a BullMQ queue of the scheduler, by state (waiting, active, delayed, failed)',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        this.reset();
        await Promise.all(
          [...queues].map(async ([queue, counts]) => {
            const c = await withTimeout(counts(), timeoutMs).catch(() => null);
            if (c) for (const state of QUEUE_STATES) this.set({ queue, state }, c[state]);
          }),
        );
      },
    });
  }

  /** Shows the job counts of a queue, read by `counts` on each scrape. */
  observeQueue(queue: string, counts: () => Promise<QueueCounts>): void {
    this.queues.set(queue, counts);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
