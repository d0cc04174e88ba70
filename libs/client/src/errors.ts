/** A REST call the gateway refused: its status and its `{error: {code, message, field?}}` body. */
export class SkaldApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    /** Seconds to wait before trying again (`429`'s `Retry-After`), when the server said. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'SkaldApiError';
  }
}

/** A chat connection that will not reconnect on its own: the credential ended (`4401`) or the tries ran out. */
export class SkaldConnectionError extends Error {
  constructor(
    readonly reason: 'unauthorized' | 'gave_up' | 'closed',
    message: string,
  ) {
    super(message);
    this.name = 'SkaldConnectionError';
  }
}
