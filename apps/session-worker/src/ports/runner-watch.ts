import { TOOL_ALIVE_INTERVAL_MS, TOOL_ALIVE_LOSS_MS, TOPICS } from '@skald/contracts';
import type { Bus } from '@skald/messaging';

export const RUNNER_LOST = 'lost' as const;

/**
 * When the watch subscribes to the runner's signs of life: half an interval after the hand-over,
 * before the runner's first one (it sends them from one interval after it took the call on). A call
 * that ends sooner — most do — costs no subscription at all.
 */
export const WATCH_AFTER_MS = TOOL_ALIVE_INTERVAL_MS / 2;

/**
 * Watches the signs of life (`tools.alive.<id>`) of the runner a call was handed to: `lost`
 * resolves when, after a first sign, none arrived for `lossMs` since the last one. Until the first
 * sign the call is not given up here but by its request's deadline: a runner of a release before
 * `tools.alive` sends none (a rolling upgrade may hand it the call), and a request that finds no
 * runner is tried again for a while (`SKALD_NO_RESPONDER_RETRY_MS`) before anybody took it. A
 * runner that dies before its first sign (one interval after it took the call on) is therefore
 * noticed at the deadline, not after `lossMs`. The subscription is made `watchAfterMs` after the
 * hand-over (a runner's first sign comes one interval after it received the call, and losing one
 * would not matter: the loss window spans several), so that a short call costs no SUB/UNSUB round
 * with the server.
 */
export function watchRunner(
  bus: Bus,
  toolCallId: string,
  lossMs: number = TOOL_ALIVE_LOSS_MS,
  watchAfterMs: number = WATCH_AFTER_MS,
): { lost: Promise<typeof RUNNER_LOST>; close(): void } {
  let timer: NodeJS.Timeout | undefined;
  let declare: (v: typeof RUNNER_LOST) => void = () => undefined;
  const lost = new Promise<typeof RUNNER_LOST>((resolve) => (declare = resolve));
  let closed = false;
  const arm = (): void => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => declare(RUNNER_LOST), lossMs);
  };
  let sub: { unsubscribe(): void } | undefined;
  const start = setTimeout(() => {
    if (!closed) sub = bus.subscribe(TOPICS.toolAlive.subject(toolCallId), TOPICS.toolAlive.message, arm);
  }, watchAfterMs);
  return {
    lost,
    close: () => {
      closed = true;
      clearTimeout(start);
      clearTimeout(timer);
      sub?.unsubscribe();
    },
  };
}
