import { TOOL_ALIVE_LOSS_MS, topicOf } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';

export const RUNNER_LOST = 'lost' as const;

/**
 * Watches the signs of life (`tools.alive.<id>`) of the runner a call was handed to: `lost`
 * resolves when, after a first sign, none arrived for `lossMs` since the last one. A runner sends
 * one on receipt and then every interval, so a runner killed at any moment of a call is noticed
 * `lossMs` after its last sign. Until the first sign the call is not given up here but by its
 * request's deadline: a runner of a release that sends no sign on receipt may be handed the call
 * during a rolling upgrade, and a request that finds no runner is tried again for a while
 * (`SKALD_NO_RESPONDER_RETRY_MS`) before anybody took it. The watch subscribes before the request
 * is sent, so that the sign on receipt is not missed.
 */
export function watchRunner(
  bus: Bus,
  toolCallId: string,
  lossMs: number = TOOL_ALIVE_LOSS_MS,
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
  const sub = bus.subscribe(topicOf('toolAlive', toolCallId), arm);
  return {
    lost,
    close: () => {
      closed = true;
      clearTimeout(timer);
      sub.unsubscribe();
    },
  };
}
