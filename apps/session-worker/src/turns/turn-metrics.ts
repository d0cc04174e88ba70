import { Inject, Injectable } from '@nestjs/common';
import { METRICS_REGISTRY } from '@skald/service-kit';
import { Counter, Gauge, Registry } from 'prom-client';

/** Prometheus metrics of the session worker. */
@Injectable()
export class TurnMetrics {
  readonly turnsStarted: Counter;
  readonly turnsFinished: Counter<'outcome'>;
  readonly leaseTakeovers: Counter;
  /** Running turns whose lease expired and that no sweep recovered within two intervals. */
  readonly stuckTurns: Gauge;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.turnsStarted = new Counter({
      name: 'skald_turns_started_total',
      help: 'Turns started from user input',
      registers: [registry],
    });
    this.turnsFinished = new Counter({
      name: 'skald_turns_finished_total',
      help: 'Turn runs ended, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.leaseTakeovers = new Counter({
      name: 'skald_lease_takeovers_total',
      help: 'Leases taken from an earlier owner (epoch > 1)',
      registers: [registry],
    });
    this.stuckTurns = new Gauge({
      name: 'skald_stuck_turns',
      help: 'Running turns whose lease expired more than two sweep intervals ago',
      registers: [registry],
    });
  }
}
