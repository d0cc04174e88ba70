import { BusRequestError } from '@skald/messaging/bus-errors';
import { ErrorCode } from '@skald/contracts';

const STATUS: Record<ErrorCode, number> = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  rate_limited: 429,
  unavailable: 503,
  interrupted: 409,
  llm_failed: 502,
  exhausted: 409,
  internal: 500,
};

/** An error with a code the edge maps to an HTTP status and `{error: {code, message, field?}}`. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    readonly retryAfterSecs?: number,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = STATUS[code];
  }
}

export const notFound = (what: string): ApiError => new ApiError('not_found', `${what} not found`);

/**
 * Runs a request to another service; when no instance of it answers (a `BusRequestError`), the
 * client gets 503 `unavailable` with Retry-After, in words naming the service. Any other error
 * (a typed answer such as `not_found`) goes through unchanged.
 */
export async function callService<T>(unavailable: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof BusRequestError) throw new ApiError('unavailable', unavailable, undefined, 2);
    throw e;
  }
}
