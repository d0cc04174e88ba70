import type { Logger } from '@skald/service-kit';
import type { WorkerConfig } from '../config';
import type { Lease, LeaseRepository } from '../lease/lease.repository';
import type { TurnStateRepository } from '../sessions/turn-state.repository';
import type { Driving } from './driving';

/** How long a command waits for a driver that is letting go of a finished session. */
const COMMAND_LEASE_WAIT_MS = 5_000;

/** What the driver tells the lease keeper about its own state. */
export interface DriverState {
  draining(): boolean;
  driving(sessionId: string): boolean;
}

/**
 * The driver's side of the session lease (the rows are LeaseRepository's): the heartbeat that
 * keeps it while a session is driven, and the take for a command that must hold it.
 */
export class LeaseKeeping {
  constructor(
    private readonly leases: LeaseRepository,
    private readonly turnState: TurnStateRepository,
    private readonly config: WorkerConfig,
    private readonly instance: string,
    private readonly log: Logger,
    private readonly driver: DriverState,
  ) {}

  /** Renews the lease every third of its TTL; a lost lease aborts the turn; a stored stop too. */
  startHeartbeat(d: Driving): NodeJS.Timeout {
    const { lease } = d;
    const every = Math.max(200, Math.floor(this.config.SKALD_LEASE_TTL_MS / 3));
    const timer = setInterval(() => {
      void (async () => {
        try {
          if (!(await this.leases.renew(lease, this.config.SKALD_LEASE_TTL_MS))) {
            this.log.warn({ ...d.ids, epoch: lease.epoch }, 'lease not renewed; aborting the turn');
            d.lost.abort();
            return;
          }
          if (!d.turn.signal.aborted && (await this.turnState.stopRequested(lease.sessionId))) d.turn.abort();
        } catch (e) {
          this.log.warn({ ...d.ids, err: String(e) }, 'lease renewal failed');
        }
      })();
    }, every);
    timer.unref();
    return timer;
  }

  /**
   * The lease for a command. A driver that has just finished a turn still holds the lease for a
   * moment (it looks at the inbox once more), so while the session's turn is finished the command
   * waits up to `COMMAND_LEASE_WAIT_MS` for it; a running or parked turn answers null at once.
   */
  async acquireForCommand(sessionId: string): Promise<Lease | null> {
    const deadline = Date.now() + COMMAND_LEASE_WAIT_MS;
    for (;;) {
      if (this.driver.draining()) return null;
      if (!this.driver.driving(sessionId)) {
        const lease = await this.leases.acquire(sessionId, this.instance, this.config.SKALD_LEASE_TTL_MS);
        if (lease) return lease;
      }
      if (Date.now() >= deadline || (await this.turnState.turnState(sessionId)) !== 'finished') return null;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
