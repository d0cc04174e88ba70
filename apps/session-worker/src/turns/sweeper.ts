import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { SessionsRepository } from '../sessions/sessions.repository';
import { SweepCursor } from './sweep-cursor';
import { TurnDriver } from './turn-driver';
import { TurnMetrics } from './turn-metrics';

/** Sessions with work a sweep drives at most, and parked turns it looks at. */
export const DRIVE_PAGE = 50;
export const PARKED_PAGE = 10;

/**
 * Reconciles from the database: on start and periodically, sessions with work and no live driver
 * (queued input, a running turn whose lease expired, a stop for a parked turn) are driven, and
 * parked turns are looked at in case an answer's doorbell was lost. Both walk their whole set with
 * a cursor, a page a sweep, so none is skipped forever. A running turn whose lease expired more
 * than two intervals ago is reported as stuck (metric + log line).
 */
@Injectable()
export class Sweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private readonly drivable = new SweepCursor(DRIVE_PAGE);
  private readonly parked = new SweepCursor(PARKED_PAGE);

  constructor(
    private readonly sessions: SessionsRepository,
    private readonly driver: TurnDriver,
    private readonly metrics: TurnMetrics,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {}

  onApplicationBootstrap(): void {
    const jitter = Math.floor(Math.random() * 250);
    this.timer = setInterval(() => void this.sweep(), this.config.SKALD_SWEEP_INTERVAL_MS + jitter);
    this.timer.unref();
    setImmediate(() => void this.sweep());
  }

  async sweep(): Promise<void> {
    try {
      for (const id of await this.drivable.next((n, after) => this.sessions.needingDriver(n, after))) {
        if (this.driver.isDriving(id)) continue;
        this.log.info({ sessionId: id }, 'sweep: driving a session with work and no live driver');
        void this.driver.drive(id);
      }
      for (const id of await this.parked.next((n, after) => this.sessions.parked(n, after)))
        if (!this.driver.isDriving(id)) void this.driver.drive(id);
      const stuck = await this.sessions.stuck(2 * this.config.SKALD_SWEEP_INTERVAL_MS + this.config.SKALD_LEASE_TTL_MS);
      this.metrics.stuckTurns.set(stuck.length);
      this.metrics.inboxPending.set(await this.sessions.inboxPending());
      if (stuck.length > 0)
        this.log.error(
          { sessions: stuck.slice(0, 20), count: stuck.length },
          'stuck turns: lease expired and not recovered within two sweeps',
        );
    } catch (e) {
      this.log.warn({ err: String(e) }, 'sweep failed');
    }
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
