import { Inject, Injectable } from '@nestjs/common';
import { METRICS_REGISTRY } from '@skald/service-kit/ops';
import { Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of the gateway's sockets. */
@Injectable()
export class GatewayMetrics {
  readonly wsConnections: Gauge;
  /** From the moment a service published an event to the moment it was written to every socket here. */
  readonly eventFanout: Histogram<'kind'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.wsConnections = new Gauge({
      name: 'skald_ws_connections',
      help: 'Open WebSocket connections on this gateway',
      registers: [registry],
    });
    this.eventFanout = new Histogram({
      name: 'skald_event_fanout_seconds',
      help: 'Publish-to-socket latency of events (session, ephemeral, user) delivered by this gateway',
      labelNames: ['kind'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
  }

  fannedOut(kind: 'session' | 'ephemeral' | 'user', sentAt: number | null): void {
    if (sentAt !== null) this.eventFanout.observe({ kind }, Math.max(0, Date.now() - sentAt) / 1000);
  }
}
