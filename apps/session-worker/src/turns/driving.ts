import type { LogIds, Logger } from '@skald/service-kit';
import { loggerWithIds } from '@skald/service-kit/log-ids';
import type { Lease } from '../lease/lease.repository';
import type { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';

/** What a driver of one session holds while it drives it (see TurnDriver). */
export interface Driving {
  lease: Lease;
  /** The current turn's /stop signal; replaced for each turn of the session. */
  turn: AbortController;
  /** Aborted when the lease is lost: stop driving, write nothing more. */
  lost: AbortController;
  /** The user, session and turn of the current turn, for the lines logged outside it (failure, heartbeat). */
  ids: LogIds;
  /** The logger of the current turn: its lines carry `ids` (passed down to what logs during the turn). */
  log: Logger;
  /** The store of the current turn: when it last looked at the queued inbox (`lastLookAt`). */
  store: PgSessionStore | null;
  /** When (performance.now()) the session's doorbell last rang here while it was driven; 0 if not. */
  rangAt: number;
  /** When (performance.now()) a turn was held back by the user's cap on running turns; 0 if not. */
  cappedAt: number;
  /** A turn of this drive ended or parked (its slot freed): a held-back session of the user is woken. */
  freed: boolean;
}

/** What a driver of `lease` holds: its signals and the session's logger (the turn's ids are added as it starts). */
export function newDriving(lease: Lease, log: Logger): Driving {
  const { sessionId } = lease;
  return {
    lease,
    turn: new AbortController(),
    lost: new AbortController(),
    ids: { sessionId },
    log: loggerWithIds(log, { sessionId }),
    store: null,
    rangAt: 0,
    cappedAt: 0,
    freed: false,
  };
}
