import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnDriver } from './turn-driver';

/**
 * Reconciles from the database: on start and periodically, sessions with work and no live driver
 * (queued input, or a running turn whose lease expired) are driven. A lost doorbell or a dead
 * worker never strands a session for longer than the lease plus one interval.
 */
@Injectable()
export class Sweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sessions: SessionsRepository,
    private readonly driver: TurnDriver,
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
      const ids = await this.sessions.needingDriver(50);
      for (const id of ids) {
        if (!this.driver.isDriving(id)) {
          this.log.info({ sessionId: id }, 'sweep: driving a session with work and no live driver');
          void this.driver.drive(id);
        }
      }
    } catch (e) {
      this.log.warn({ err: String(e) }, 'sweep failed');
    }
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
