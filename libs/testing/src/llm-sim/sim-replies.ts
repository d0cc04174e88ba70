import type { SimFailureReply } from './sim-types';

/** Shorthands for scripted failures. */
export const simFail = {
  /** HTTP 429 with `retry-after`. */
  rateLimited: (retryAfterSeconds = 1, message?: string): SimFailureReply => ({
    fail: { kind: 'http_error', status: 429, retryAfterSeconds, message },
  }),
  /** HTTP 500 (or another 5xx). */
  serverError: (status = 500, message?: string): SimFailureReply => ({ fail: { kind: 'http_error', status, message } }),
  /** Any HTTP error status with an OpenAI-style body. */
  http: (status: number, message?: string): SimFailureReply => ({ fail: { kind: 'http_error', status, message } }),
  /** Accept the request and never answer. */
  timeout: (): SimFailureReply => ({ fail: { kind: 'timeout' } }),
  /** Destroy the socket before any byte. (For a drop mid-stream, use `dropAfterChunks` on a completion.) */
  drop: (): SimFailureReply => ({ fail: { kind: 'drop' } }),
  /** Stream some chunks, then an in-band error event. */
  streamError: (afterChunks = 2, message?: string): SimFailureReply => ({
    fail: { kind: 'stream_error', afterChunks, message },
  }),
};
