import { Inject, Injectable } from '@nestjs/common';
import { METRICS_REGISTRY } from '@skald/service-kit/ops';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of the approval service. */
@Injectable()
export class ApprovalMetrics {
  /** `approval.check` answers, by decision and by what decided (rule, bypass, run_context…). */
  readonly decisions: Counter<'decision' | 'by'>;
  /** How long a human took to answer, by answer (approve, reject, answer). */
  readonly humanWait: Histogram<'action'>;
  /** The gate's own time for an `approval.check` (from the parsed request to the decision; NATS excluded). */
  readonly checkSeconds: Histogram;
  /** Automatic decisions not yet written to the audit log (read at each scrape). */
  private auditPending: () => number = () => 0;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.decisions = new Counter({
      name: 'skald_approval_decisions_total',
      help: 'Gate decisions by decision and source of the decision',
      labelNames: ['decision', 'by'],
      registers: [registry],
    });
    this.humanWait = new Histogram({
      name: 'skald_approval_wait_seconds',
      help: 'Time from a human request (approval or question) to its answer',
      labelNames: ['action'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600],
      registers: [registry],
    });
    this.checkSeconds = new Histogram({
      name: 'skald_approval_check_seconds',
      help: "The gate's own time for approval.check, NATS excluded",
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.25],
      registers: [registry],
    });
    const pending: Gauge = new Gauge({
      name: 'skald_approval_audit_pending',
      help: 'Automatic decisions buffered for the audit log, not yet written (tool calls are refused at 20,000)',
      registers: [registry],
      collect: () => pending.set(this.auditPending()),
    });
  }

  /** Where the audit gauge reads from (the AuditService; metrics are built before it). */
  watchAudit(pending: () => number): void {
    this.auditPending = pending;
  }
}
