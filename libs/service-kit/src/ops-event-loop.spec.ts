import type { Registry } from 'prom-client';
import { METRICS_REGISTRY, OpsModule, Readiness } from './ops';

/**
 * The event-loop delay is sampled every EVENT_LOOP_SAMPLE_MS (not prom-client's 10 ms, which woke
 * every idle service ~180 times a second): a stall the `SkaldEventLoopLag` alert is about (its p99
 * over 0.5 s) still shows in full.
 */
describe('OpsModule event-loop metrics', () => {
  it('a 700 ms stall shows in nodejs_eventloop_lag_max_seconds and p99', async () => {
    const mod = OpsModule.forRoot({ service: 'spec', readiness: new Readiness(), metrics: { trustLoopback: false } });
    const registry = (mod.providers as Array<{ provide: unknown; useValue: unknown }>).find(
      (p) => p.provide === METRICS_REGISTRY,
    )!.useValue as Registry;
    await new Promise((r) => setTimeout(r, 250));
    // Timed on the monotonic clock the histogram uses: a step of the wall clock cannot shorten it.
    const until = performance.now() + 700;
    while (performance.now() < until) {
      // a blocked event loop
    }
    await new Promise((r) => setTimeout(r, 250));
    // As a scrape of /metrics does: the lag gauge's collect sets every nodejs_eventloop_lag_* metric.
    await registry.metrics();
    const value = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;
    expect(await value('nodejs_eventloop_lag_max_seconds')).toBeGreaterThan(0.5);
    expect(await value('nodejs_eventloop_lag_p99_seconds')).toBeGreaterThan(0.5);
  });
});
