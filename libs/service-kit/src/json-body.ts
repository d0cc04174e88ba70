import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeUtf8Strict, JSON_LIMITS, scanJsonStructure } from './bounded-json';

/** A JSON request body refused before it was parsed; the edge answers `status` with `{error: {code, message, field?}}`. */
export class JsonBodyError extends Error {
  readonly status = 400;
  readonly code = 'invalid_input';
  /** body-parser keeps an error's own `type`. */
  readonly type = 'entity.refused';
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'JsonBodyError';
  }
}

/**
 * body-parser's `verify` hook for JSON bodies: runs on the raw (inflated, size-limited) bytes before
 * `JSON.parse`. The body must be UTF-8 (RFC 8259) and its structure within JSON_LIMITS.
 */
export function verifyJsonBody(_req: IncomingMessage, _res: ServerResponse, buf: Buffer, encoding: string): void {
  if (encoding.toLowerCase() !== 'utf-8' && encoding.toLowerCase() !== 'utf8')
    throw new JsonBodyError(`request body must be UTF-8, not ${encoding.slice(0, 32)}`);
  const text = decodeUtf8Strict(buf);
  if (text === null) throw new JsonBodyError('request body is not valid UTF-8');
  const problem = scanJsonStructure(text, JSON_LIMITS);
  if (problem)
    throw new JsonBodyError(problem.field ? problem.message : `request body ${problem.message}`, problem.field);
}
