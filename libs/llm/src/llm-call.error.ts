import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';

/**
 * - `aborted`: the caller's signal fired (a /stop); never retried.
 * - `timeout`, `network`, `rate_limited`, `server`, `invalid_response`: worth another attempt or another client.
 * - `auth` (401/403), `not_found` (404), `bad_request` (400/413/422 and other 4xx): not retriable.
 */
export type LlmErrorKind =
  | 'aborted'
  | 'timeout'
  | 'network'
  | 'rate_limited'
  | 'server'
  | 'invalid_response'
  | 'auth'
  | 'not_found'
  | 'bad_request';

const RETRIABLE: Record<LlmErrorKind, boolean> = {
  aborted: false,
  timeout: true,
  network: true,
  rate_limited: true,
  server: true,
  invalid_response: true,
  auth: false,
  not_found: false,
  bad_request: false,
};

const DESCRIPTION: Record<LlmErrorKind, string> = {
  aborted: 'request aborted',
  timeout: 'timed out',
  network: 'network error',
  rate_limited: 'rate limited',
  server: 'provider error',
  invalid_response: 'invalid response',
  auth: 'authentication refused',
  not_found: 'not found',
  bad_request: 'request rejected',
};

/** One failed LLM call, normalised. Its message and fields never contain the client's API key. */
export class LlmCallError extends Error {
  readonly code = 'llm_call_failed';
  readonly retriable: boolean;
  /** The caller's signal fired. */
  readonly aborted: boolean;

  constructor(
    readonly kind: LlmErrorKind,
    readonly clientName: string,
    /** What the provider (or the network) said, already scrubbed of secrets. */
    readonly detail: string,
    readonly status?: number,
    /** From the response's `retry-after` (a 429 or a 5xx), when given. */
    readonly retryAfterMs?: number,
  ) {
    super(
      `LLM client "${clientName}": ${DESCRIPTION[kind]}${status === undefined ? '' : ` (HTTP ${status})`}${detail ? `: ${detail}` : ''}`,
    );
    this.name = 'LlmCallError';
    this.retriable = RETRIABLE[kind];
    this.aborted = kind === 'aborted';
  }

  /** Whether this failure says something about the client's health (not a caller abort or a malformed request). */
  get countsAgainstHealth(): boolean {
    return this.kind !== 'aborted' && this.kind !== 'bad_request';
  }
}

export function kindForStatus(status: number): LlmErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  if (status === 408) return 'timeout';
  if (status === 409) return 'server';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server';
  return 'bad_request';
}

export interface ErrorContext {
  clientName: string;
  /** The secret to scrub from any text that ends up in the error. */
  apiKey: string | null;
  /** The caller's signal fired. */
  aborted: boolean;
  /** Our own deadline (whole call or idle) fired. */
  timedOut: string | null;
}

/** Maps anything thrown by the SDK, fetch or the stream into an {@link LlmCallError}. */
export function toLlmCallError(err: unknown, ctx: ErrorContext): LlmCallError {
  if (err instanceof LlmCallError) return err;
  const scrub = (text: string): string => scrubSecrets(text, ctx.apiKey);
  if (ctx.aborted) return new LlmCallError('aborted', ctx.clientName, 'the caller cancelled the request');
  if (ctx.timedOut !== null) return new LlmCallError('timeout', ctx.clientName, ctx.timedOut);
  if (err instanceof APIUserAbortError) return new LlmCallError('aborted', ctx.clientName, 'the request was aborted');
  if (err instanceof APIConnectionTimeoutError)
    return new LlmCallError('timeout', ctx.clientName, 'no response in time');
  if (err instanceof APIConnectionError) {
    return new LlmCallError('network', ctx.clientName, scrub(describeCause(err)));
  }
  if (err instanceof APIError) {
    const apiError = err as ProviderError;
    const detail = scrub(providerMessage(apiError));
    const status = apiError.status;
    if (status === undefined) return new LlmCallError('server', ctx.clientName, detail || 'error event in the stream');
    const retryAfterMs = parseRetryAfter(apiError.headers?.get('retry-after') ?? null);
    return new LlmCallError(kindForStatus(status), ctx.clientName, detail, status, retryAfterMs);
  }
  if (err instanceof SyntaxError || isNamed(err, 'SyntaxError')) {
    return new LlmCallError('invalid_response', ctx.clientName, `unparseable stream data: ${scrub(messageOf(err))}`);
  }
  // fetch / undici failures mid-body: `TypeError: terminated`, socket errors, ECONNRESET…
  return new LlmCallError('network', ctx.clientName, scrub(describeCause(err)));
}

type ProviderError = APIError<number | undefined, Headers | undefined, { message?: unknown } | undefined>;

function providerMessage(err: ProviderError): string {
  const body = err.error;
  if (body && typeof body.message === 'string') return body.message;
  return err.message.replace(/^\d{3}\s+/, '');
}

function describeCause(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    const message = messageOf(current);
    const code = (current as { code?: unknown }).code;
    if (message) parts.push(typeof code === 'string' ? `${message} (${code})` : message);
    current = (current as { cause?: unknown }).cause;
  }
  return [...new Set(parts)].join(': ') || 'connection failed';
}

function messageOf(err: unknown): string {
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string') {
    return (err as { message: string }).message;
  }
  return typeof err === 'string' ? err : '';
}

function isNamed(err: unknown, name: string): boolean {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === name;
}

/** `retry-after` as seconds or an HTTP date, in milliseconds. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Removes the key itself, bearer tokens and anything shaped like an OpenAI-style secret key. */
export function scrubSecrets(text: string, apiKey: string | null): string {
  let result = text;
  if (apiKey && apiKey.length >= 4) result = result.split(apiKey).join('[redacted]');
  return result
    .replace(/Bearer\s+[^\s"',]+/gi, 'Bearer [redacted]')
    .replace(/\b(sk|rk|pk)-[A-Za-z0-9_*-]{8,}/g, '$1-[redacted]')
    .slice(0, 2000);
}
