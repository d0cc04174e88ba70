import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { Histogram, Registry } from 'prom-client';

/** The header that carries a request's id, in and out. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * An id a client or a proxy may choose: 8 to 128 characters of letters, digits and `._:-`,
 * starting with a letter or digit (a UUID, a ULID, a proxy's hex id). Anything else (a list,
 * spaces, control characters, a log-injection attempt) is replaced by a fresh UUID.
 */
const WELL_FORMED_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$/;

/** The request's id: the incoming `X-Request-Id` when it is well-formed, else a new UUID. */
export function requestIdOf(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && WELL_FORMED_ID.test(incoming) ? incoming : randomUUID();
}

/** What Express leaves on a request it routed. */
export interface RoutedRequest extends IncomingMessage {
  baseUrl?: string;
  route?: { path?: unknown };
}

/**
 * The route template that served a request (`/api/sessions/:id`), never its raw path (ids and
 * file names would make one series per request); `unmatched` when no route took it (a 404, or a
 * request refused before routing).
 */
export function routeOf(req: RoutedRequest): string {
  const path = req.route?.path;
  return typeof path === 'string' ? `${req.baseUrl ?? ''}${path}` : 'unmatched';
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** The method as a bounded label: an unknown method is `_OTHER` (as the HTTP semantic conventions say). */
function methodOf(req: IncomingMessage): string {
  const m = (req.method ?? '').toUpperCase();
  return METHODS.has(m) ? m : '_OTHER';
}

/** Probes and scrapes: logged at debug, not at info (they come every few seconds). */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export const HTTP_DURATION_METRIC = 'http_server_request_duration_seconds';

type Next = (err?: unknown) => void;

/**
 * The HTTP side of an app's telemetry, as the first middleware: a request id per request
 * ({@link requestIdOf}), echoed in `X-Request-Id`; one access-log line per request when its
 * response ends or its connection closes (method, route template, status, duration, request id,
 * trace id when traced — never the query string, headers or body); RED metrics per route in
 * `http_server_request_duration_seconds{method,route,status_code}` (rate and errors are its
 * `_count` by status, duration its buckets); and the HTTP server span, when tracing is on, named
 * `METHOD route` with `http.route`.
 */
export function httpTelemetry(log: Logger, registry: Registry | null) {
  const duration =
    registry === null
      ? null
      : new Histogram({
          name: HTTP_DURATION_METRIC,
          help: 'Duration of HTTP requests served, by method, route template and status code',
          labelNames: ['method', 'route', 'status_code'] as const,
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers: [registry],
        });
  return (req: RoutedRequest, res: ServerResponse, next: Next): void => {
    const started = process.hrtime.bigint();
    const reqId = requestIdOf(req.headers['x-request-id']);
    res.setHeader(REQUEST_ID_HEADER, reqId);
    const span = trace.getActiveSpan();
    // Before the HTTP instrumentation's own `close` listener, which ends the span: the route is
    // named on it while it is still open.
    res.prependOnceListener('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const method = methodOf(req);
      const route = routeOf(req);
      const status = res.statusCode;
      duration?.observe({ method, route, status_code: String(status) }, seconds);
      const traceId = span && isSpanContextValid(span.spanContext()) ? span.spanContext().traceId : undefined;
      if (span && route !== 'unmatched') {
        span.updateName(`${method} ${route}`);
        span.setAttribute('http.route', route);
      }
      const line = {
        reqId,
        method,
        route,
        status,
        durationMs: Math.round(seconds * 1e4) / 10,
        ...(res.writableFinished ? {} : { aborted: true }),
        ...(traceId ? { traceId } : {}),
      };
      const quiet = QUIET_PATHS.has((req.url ?? '').split('?')[0]);
      if (quiet) log.debug(line, 'http request');
      else log.info(line, 'http request');
    });
    next();
  };
}
