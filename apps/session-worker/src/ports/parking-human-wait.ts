import type { HumanAnswer, HumanRequest, HumanWaitPort } from '@skald/agent-loop';

/**
 * Minimal human wait for the skeleton: the approval card is already committed and announced, and
 * the turn parks at once (lease released, call stays `awaiting_human`). Answering it — durable
 * approval requests, resolution from any surface, `resolvePendingCall` — lands with the approval
 * service work (issue 5) and the parking rules of issue 4, which replace this class.
 */
export class ParkingHumanWait implements HumanWaitPort {
  awaitHuman(_request: HumanRequest, signal: AbortSignal): Promise<HumanAnswer> {
    return Promise.resolve(signal.aborted ? { kind: 'cancelled' } : { kind: 'park' });
  }
}
