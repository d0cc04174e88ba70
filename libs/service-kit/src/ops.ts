import { Controller, Get, Header, HttpException, Inject, Injectable, Module, DynamicModule, Req } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { logLinesDropped } from './logger';
import { MetricsAccess, metricsGuard, MetricsRequest } from './metrics-access';
import { Public } from './public-route';

/**
 * How often the event-loop delay histogram (`nodejs_eventloop_lag_*`) samples, in ms. prom-client's
 * default, 10 ms, wakes every idle service ~180 times a second (a timer and an `epoll_pwait` each:
 * 379 in 2 s of an idle process under `strace -c`, 43 at 100 ms); a stall still shows in full, as
 * the delay of the sample it holds up.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

export type ReadinessCheck = () => Promise<void> | void;

/** Named readiness checks registered by the modules of an app (database, NATS, sandbox…). */
@Injectable()
export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly notes = new Map<string, string>();
  private draining = false;

  register(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }
  /** A line `/readyz` always shows (e.g. "sandbox disabled by SKALD_SANDBOX=none"). */
  note(name: string, text: string): void {
    this.notes.set(name, text);
  }
  startDraining(): void {
    this.draining = true;
  }

  async report(): Promise<{ ready: boolean; checks: Record<string, string>; notes: Record<string, string> }> {
    const checks: Record<string, string> = {};
    let ready = !this.draining;
    if (this.draining) checks.draining = 'shutting down';
    for (const [name, check] of this.checks) {
      try {
        await check();
        checks[name] = 'ok';
      } catch (e) {
        ready = false;
        checks[name] = e instanceof Error ? e.message : String(e);
      }
    }
    return { ready, checks, notes: Object.fromEntries(this.notes) };
  }
}

export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');
export const OPS_OPTIONS = Symbol('OPS_OPTIONS');
export interface OpsOptions {
  service: string;
  /** The app's readiness registry, created before Nest so that other modules can register into it. */
  readiness: Readiness;
  /**
   * Who may read `/metrics` (required: no app serves it to everyone). Every app passes
   * `metricsAccessOf(config)`; the gateway adds its admins' tokens.
   */
  metrics: MetricsAccess;
}

@Controller()
export class OpsController {
  private readonly mayReadMetrics: (req: MetricsRequest) => Promise<boolean>;

  constructor(
    private readonly readiness: Readiness,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
    @Inject(OPS_OPTIONS) private readonly options: OpsOptions,
  ) {
    this.mayReadMetrics = metricsGuard(options.metrics);
  }

  @Public()
  @Get('healthz')
  healthz(): { status: 'ok'; service: string } {
    return { status: 'ok', service: this.options.service };
  }

  @Public()
  @Get('readyz')
  async readyz(): Promise<unknown> {
    const report = await this.readiness.report();
    if (!report.ready) throw new HttpException({ status: 'not_ready', ...report }, 503);
    return { status: 'ready', ...report };
  }

  /** Public to the app's auth guard: `metricsGuard` (metrics-access.ts) decides who may read it. */
  @Public()
  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async metrics(@Req() req: MetricsRequest): Promise<string> {
    if (!(await this.mayReadMetrics(req))) {
      throw new HttpException(
        { error: { code: 'forbidden', message: 'metrics need the scrape token SKALD_METRICS_TOKEN' } },
        403,
      );
    }
    return this.registry.metrics();
  }
}

/** `/healthz`, `/readyz` and Prometheus `/metrics` at the app's root. */
@Module({})
export class OpsModule {
  static forRoot(options: OpsOptions): DynamicModule {
    const registry = new Registry();
    registry.setDefaultLabels({ service: options.service });
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    let reported = 0;
    new Counter({
      name: 'skald_log_lines_dropped_total',
      help: 'Log lines dropped because stdout was not read fast enough or was closed',
      registers: [registry],
      collect() {
        const n = logLinesDropped();
        if (n > reported) this.inc(n - reported);
        reported = n;
      },
    });
    return {
      module: OpsModule,
      global: true,
      controllers: [OpsController],
      providers: [
        { provide: Readiness, useValue: options.readiness },
        { provide: METRICS_REGISTRY, useValue: registry },
        { provide: OPS_OPTIONS, useValue: options },
      ],
      exports: [Readiness, METRICS_REGISTRY],
    };
  }
}
