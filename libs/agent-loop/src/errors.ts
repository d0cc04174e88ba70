/** `resolvePendingCall` was handed a call that is not waiting for a human (already answered,
 *  unknown, or of another session). First answer wins: the caller reports a conflict. */
export class CallNotAwaitingHumanError extends Error {
  readonly code = 'conflict';
  constructor(readonly toolCallId: string) {
    super(`tool call ${toolCallId} is not awaiting a human answer`);
    this.name = 'CallNotAwaitingHumanError';
  }
}

/** The stored state breaks an invariant the loop relies on (a bug or a foreign write). */
export class LoopInvariantError extends Error {
  readonly code = 'invariant';
  constructor(message: string) {
    super(message);
    this.name = 'LoopInvariantError';
  }
}
