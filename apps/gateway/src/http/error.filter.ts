import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { databaseInputError } from '@skald/messaging/database-input';
import { JsonBodyError } from '@skald/service-kit/json-body';
import type { Logger } from '@skald/service-kit';
import type { ErrorCode } from '@skald/contracts';
import { ApiError } from './api-error';
import { isOpenAiPath, toOpenAiError } from '../openai/openai-error';

interface Res {
  status(code: number): Res;
  setHeader(name: string, value: string): void;
  json(body: unknown): void;
  headersSent?: boolean;
}

/**
 * Every error leaves as `{error: {code, message, field?}}` with a fitting status (under `/v1`, the
 * OpenAI-compatible endpoint, as `{error: {message, type, param, code}}`); never a stack trace.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(private readonly log: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Res>();
    if (res.headersSent) return;
    const { status, body, retryAfter } = this.map(exception);
    if (retryAfter) res.setHeader('Retry-After', String(retryAfter));
    // The OpenAI-compatible endpoint answers in OpenAI's error shape, which its clients read.
    const http = host.switchToHttp();
    const req = http.getRequest<{ originalUrl?: string; url?: string }>();
    if (isOpenAiPath(req.originalUrl ?? req.url)) res.status(status).json(toOpenAiError(status, body));
    else res.status(status).json({ error: body });
  }

  private map(e: unknown): {
    status: number;
    body: { code: string; message: string; field?: string };
    retryAfter?: number;
  } {
    if (e instanceof ApiError)
      return {
        status: e.status,
        body: { code: e.code, message: e.message, field: e.field },
        retryAfter: e.retryAfterSecs,
      };
    if (e instanceof RemoteError) {
      const err = new ApiError(e.body.code, e.body.message, e.body.field);
      return { status: err.status, body: e.body };
    }
    if (e instanceof BusRequestError) {
      this.log.warn({ subject: e.subject, code: e.code }, 'dependency unavailable');
      return {
        status: 503,
        body: { code: 'unavailable', message: 'the service is temporarily unavailable; retry shortly' },
        retryAfter: 2,
      };
    }
    if (e instanceof JsonBodyError)
      return {
        status: 400,
        body: { code: 'invalid_input', message: e.message, ...(e.field ? { field: e.field } : {}) },
      };
    if (e instanceof HttpException) {
      const status = e.getStatus();
      const r = e.getResponse() as { message?: unknown; error?: unknown; type?: string };
      if (status === 413 || (r as { type?: string }).type === 'entity.too.large') {
        return { status: 413, body: { code: 'too_large', message: 'request body exceeds 1 MiB' } };
      }
      if (status === 404) return { status, body: { code: 'not_found', message: 'no such route' } };
      if (status === 400)
        return {
          status,
          body: { code: 'invalid_input', message: typeof r.message === 'string' ? r.message : 'invalid request body' },
        };
      if (r.error && typeof r.error === 'object') return { status, body: r.error as { code: string; message: string } };
      return {
        status,
        body: { code: status === 403 ? 'forbidden' : status === 401 ? 'unauthorized' : 'internal', message: e.message },
      };
    }
    const bodyParser = e as { type?: string; status?: number };
    if (bodyParser && bodyParser.type === 'entity.too.large')
      return { status: 413, body: { code: 'too_large', message: 'request body exceeds 1 MiB' } };
    if (bodyParser && bodyParser.type === 'entity.parse.failed')
      return { status: 400, body: { code: 'invalid_input', message: 'request body is not valid JSON' } };
    // Any other client error raised below Nest (the router's URI decoding, body-parser's charset or
    // encoding checks) keeps its 4xx status; only what is left is a server error.
    const status = typeof bodyParser?.status === 'number' ? bodyParser.status : 0;
    if (status >= 400 && status < 500) return { status, body: clientError(status) };
    // A value Postgres refused (text it cannot hold, too long, out of range) that a schema let
    // through: the client's input, not a fault. The same mapping as a service's answer over NATS.
    const refused = databaseInputError(e);
    if (refused) {
      this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'input the database refused');
      return { status: 400, body: refused };
    }
    this.log.error({ err: e instanceof Error ? e.message : String(e) }, 'unhandled error');
    return { status: 500, body: { code: 'internal', message: 'internal error' } };
  }
}

/** The body of a client error that came without one of ours, by its status. */
function clientError(status: number): { code: ErrorCode; message: string } {
  switch (status) {
    case 401:
      return { code: 'unauthorized', message: 'unauthorized' };
    case 403:
      return { code: 'forbidden', message: 'forbidden' };
    case 404:
      return { code: 'not_found', message: 'no such route' };
    case 413:
      return { code: 'too_large', message: 'request body exceeds 1 MiB' };
    case 429:
      return { code: 'rate_limited', message: 'too many requests' };
    default:
      return { code: 'invalid_input', message: 'invalid request' };
  }
}
