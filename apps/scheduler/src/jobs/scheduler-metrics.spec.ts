import { Registry } from 'prom-client';
import { SchedulerMetrics } from './scheduler-metrics';

const series = (text: string) => text.split('\n').filter((l) => l.startsWith('skald_scheduler_queue_jobs{'));

describe('scheduler queue-depth gauge', () => {
  it('each scrape shows the counts read at that scrape, by queue and state', async () => {
    const registry = new Registry();
    let delayed = 3;
    new SchedulerMetrics(registry).observeQueue('skald-jobs', () =>
      Promise.resolve({ waiting: 1, active: 0, delayed, failed: 2 }),
    );
    expect(series(await registry.metrics())).toEqual([
      'skald_scheduler_queue_jobs{queue="skald-jobs",state="waiting"} 1',
      'skald_scheduler_queue_jobs{queue="skald-jobs",state="active"} 0',
      'skald_scheduler_queue_jobs{queue="skald-jobs",state="delayed"} 3',
      'skald_scheduler_queue_jobs{queue="skald-jobs",state="failed"} 2',
    ]);
    delayed = 4;
    expect(series(await registry.metrics())).toContain(
      'skald_scheduler_queue_jobs{queue="skald-jobs",state="delayed"} 4',
    );
  });

  it('a Redis that does not answer leaves the queue out of the scrape instead of hanging it or showing old counts', async () => {
    const registry = new Registry();
    let answer = true;
    new SchedulerMetrics(registry, 100).observeQueue('skald-jobs', () =>
      answer ? Promise.resolve({ waiting: 0, active: 0, delayed: 1, failed: 0 }) : new Promise(() => undefined),
    );
    expect(series(await registry.metrics())).toHaveLength(4);
    answer = false;
    const started = Date.now();
    const text = await registry.metrics();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(series(text)).toEqual([]);
    expect(text).toContain('# TYPE skald_scheduler_queue_jobs gauge');
  });
});
