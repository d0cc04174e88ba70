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
 * resolves when none arrived for `lossMs` — from the hand-over, then from the last one. The
 * subscription is made `watchAfterMs` after the hand-over (the runner's first sign comes one
 * interval after it received the call, and losing one would not matter: the loss window spans
 * several), so that a short call costs no SUB/UNSUB round with the server.
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
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => declare(RUNNER_LOST), lossMs);
  };
  let sub: { unsubscribe(): void } | undefined;
  let closed = false;
  const start = setTimeout(() => {
    if (!closed) sub = bus.subscribe(TOPICS.toolAlive.subject(toolCallId), TOPICS.toolAlive.message, arm);
  }, watchAfterMs);
  arm();
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
