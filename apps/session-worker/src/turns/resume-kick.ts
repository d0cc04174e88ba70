import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@skald/service-kit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnDriver } from './turn-driver';

/** Past a holder's lease expiry before looking again (the database clock judges it, not ours). */
const EXPIRY_MARGIN_MS = 100;

/**
 * A client resuming a session (`session.replay`) whose turn has lost its driver — its worker died
 * — gets the turn continued by this worker at once, not at the next sweep: with no live lease the
 * session is driven now; while the dead holder's lease still runs, one look is booked for when it
 * expires (a live holder renews it, and that look then finds it taken and does nothing). At most
 * one booked look per session; the sweep remains the backstop.
 */
@Injectable()
export class ResumeKick implements OnApplicationShutdown {
  private readonly booked = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly sessions: SessionsRepository,
    private readonly driver: TurnDriver,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {}

  /** The session was resumed by its user: drive it if it has work and no live driver. */
  async resumed(sessionId: string): Promise<void> {
    if (this.driver.isDriving(sessionId) || this.booked.has(sessionId)) return;
    const wanted = await this.sessions.driverWanted(sessionId).catch(() => null);
    if (!wanted) return;
    if ('now' in wanted) {
      this.drive(sessionId);
      return;
    }
    const waitMs = Math.min(wanted.leaseLeftMs, this.config.SKALD_LEASE_TTL_MS) + EXPIRY_MARGIN_MS;
    const timer = setTimeout(() => {
      this.booked.delete(sessionId);
      void this.lookAgain(sessionId);
    }, waitMs);
    timer.unref();
    this.booked.set(sessionId, timer);
  }

  onApplicationShutdown(): void {
    for (const t of this.booked.values()) clearTimeout(t);
    this.booked.clear();
  }

  /** The booked look: drives only a session whose lease is free by now (no further booking). */
  private async lookAgain(sessionId: string): Promise<void> {
    if (this.driver.isDriving(sessionId)) return;
    const wanted = await this.sessions.driverWanted(sessionId).catch(() => null);
    if (wanted && 'now' in wanted) this.drive(sessionId);
  }

  private drive(sessionId: string): void {
    this.log.info({ sessionId }, 'resume: driving a session with work and no live driver');
    void this.driver.drive(sessionId);
  }
}
