import { LoopInvariantError } from '@skald/agent-loop';
import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { CommitRejectedError } from '../loop-adapters/session-store/fence';

/**
 * Why a failed turn counts against its retry budget, or null when it does not: a commit Postgres
 * refused for its data (its SQLSTATE), or a service that answered this step with an error
 * (`remote:<code>`), or a stored state that breaks an invariant of the loop (`invariant`: e.g. the
 * session's agent left the catalog) — each gives the same answer when retried. Lost leases, timeouts, missing
 * responders and services that say they are unavailable are outages: retried without a bound.
 */
export function refusedStep(e: unknown): string | null {
  if (e instanceof CommitRejectedError) return e.sqlState;
  if (e instanceof LoopInvariantError) return 'invariant';
  if (e instanceof RemoteError && e.body.code !== 'unavailable' && e.body.code !== 'rate_limited')
    return `remote:${e.body.code}`;
  if (e instanceof BusRequestError && e.code === 'bad_reply') return 'remote:bad_reply';
  return null;
}
