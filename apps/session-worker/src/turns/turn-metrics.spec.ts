import { Registry } from 'prom-client';
import { TurnMetrics } from './turn-metrics';

describe('skald_sessions_driving (the per-worker turn concurrency the autoscaler reads)', () => {
  it('reports, at each scrape, what its source counts now', async () => {
    const registry = new Registry();
    const metrics = new TurnMetrics(registry);
    const value = async () => (await registry.getSingleMetric('skald_sessions_driving')!.get()).values[0]?.value;

    expect(await value()).toBe(0);
    let driving = 3;
    metrics.countDriving(() => driving);
    expect(await value()).toBe(3);
    driving = 1;
    expect(await value()).toBe(1);
  });
});
