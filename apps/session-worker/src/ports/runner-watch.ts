import { TOOL_ALIVE_LOSS_MS, TOPICS } from '@skald/contracts';
import type { Bus } from '@skald/messaging';

export const RUNNER_LOST = 'lost' as const;

/**
 * Watches the signs of life (`tools.alive.<id>`) of the runner a call was handed to: `lost`
 * resolves when none arrived for `lossMs` — from the hand-over, then from the last one. The
 * subscription exists before the request is sent (same connection, so the server sees it first).
 */
export function watchRunner(
  bus: Bus,
  toolCallId: string,
  lossMs: number = TOOL_ALIVE_LOSS_MS,
): { lost: Promise<typeof RUNNER_LOST>; close(): void } {
  let timer: NodeJS.Timeout | undefined;
  let declare: (v: typeof RUNNER_LOST) => void = () => undefined;
  const lost = new Promise<typeof RUNNER_LOST>((resolve) => (declare = resolve));
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => declare(RUNNER_LOST), lossMs);
  };
  const sub = bus.subscribe(TOPICS.toolAlive.subject(toolCallId), TOPICS.toolAlive.message, arm);
  arm();
  return {
    lost,
    close: () => {
      clearTimeout(timer);
      sub.unsubscribe();
    },
  };
}
