import { expect } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { httpTelemetry, requestIdOf, RoutedRequest, routeOf } from './http-telemetry';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A response as the middleware sees it: headers set, `close` at the end. */
class FakeResponse extends EventEmitter {
  statusCode = 200;
  writableFinished = false;
  readonly headers: Record<string, string> = {};
  setHeader(name: string, value: string): void {
    this.headers[name.toLowerCase()] = value;
  }
  end(status: number): void {
    this.statusCode = status;
    this.writableFinished = true;
    this.emit('close');
  }
}

function harness() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const registry = new Registry();
  const mw = httpTelemetry(pino({ level: 'debug' }, sink), registry);
  const serve = (init: Partial<RoutedRequest>, route: string | null, status: number, aborted = false) => {
    const req = { method: 'GET', url: '/', headers: {}, ...init } as RoutedRequest;
    const res = new FakeResponse();
    let nexted = false;
    mw(req, res as unknown as ServerResponse, () => {
      nexted = true;
    });
    expect(nexted).toBe(true);
    // Express sets the matched route while it dispatches
    if (route) req.route = { path: route };
    if (aborted) {
      res.statusCode = status;
      res.emit('close');
    } else res.end(status);
    return res;
  };
  return { lines, registry, serve };
}

describe('request ids', () => {
  it('keeps a well-formed incoming id and replaces anything else with a UUID', () => {
    expect(requestIdOf('3f2c1a9e-7b7d-4c1e-9a55-2f1f5e4f0a11')).toBe('3f2c1a9e-7b7d-4c1e-9a55-2f1f5e4f0a11');
    expect(requestIdOf('01HZX3K9Q2V8R4T6Y7W0ABCDEF')).toBe('01HZX3K9Q2V8R4T6Y7W0ABCDEF');
    expect(requestIdOf('proxy.req:42-ab')).toBe('proxy.req:42-ab');
    for (const bad of [
      undefined,
      '',
      'short',
      'two words here',
      'a\nfake line',
      '"quoted-value"',
      'x'.repeat(129),
      ['abcdefgh1', 'abcdefgh2'],
    ]) {
      expect(requestIdOf(bad)).toMatch(UUID);
    }
  });
});

describe('routeOf', () => {
  it('is the route template under its mount point, or `unmatched`', () => {
    expect(routeOf({ route: { path: '/api/sessions/:id' } } as RoutedRequest)).toBe('/api/sessions/:id');
    expect(routeOf({ baseUrl: '/v2', route: { path: '/x/:id' } } as RoutedRequest)).toBe('/v2/x/:id');
    expect(routeOf({} as RoutedRequest)).toBe('unmatched');
  });
});

describe('httpTelemetry', () => {
  it('echoes the request id and writes one access-log line without the query string', () => {
    const { lines, serve } = harness();
    const res = serve(
      { method: 'POST', url: '/api/cron/jobs/j-1/run?token=s3cret', headers: { 'x-request-id': 'req-12345678' } },
      '/api/cron/jobs/:id/run',
      202,
    );
    expect(res.headers['x-request-id']).toBe('req-12345678');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'http request',
        reqId: 'req-12345678',
        method: 'POST',
        route: '/api/cron/jobs/:id/run',
        status: 202,
        durationMs: expect.any(Number),
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('s3cret');
    expect(JSON.stringify(lines)).not.toContain('j-1');
  });

  it('generates an id when none comes, marks a connection closed before the end, logs probes at debug', () => {
    const { lines, serve } = harness();
    const res = serve({ url: '/api/x' }, '/api/x', 200, true);
    expect(res.headers['x-request-id']).toMatch(UUID);
    expect(lines[0]).toMatchObject({ reqId: res.headers['x-request-id'], aborted: true });
    serve({ url: '/healthz' }, '/healthz', 200);
    expect(lines[1]).toMatchObject({ level: 20, route: '/healthz' });
  });

  it('counts requests per method, route template and status; a 404 is `unmatched`, an odd method `_OTHER`', async () => {
    const { registry, serve } = harness();
    serve({ url: '/api/sessions/a' }, '/api/sessions/:id', 200);
    serve({ url: '/api/sessions/b' }, '/api/sessions/:id', 200);
    serve({ url: '/api/sessions/c' }, '/api/sessions/:id', 404);
    serve({ url: '/nope/1' }, null, 404);
    serve({ method: 'BREW', url: '/pot' }, null, 405);
    const text = await registry.metrics();
    expect(text).toContain(
      'http_server_request_duration_seconds_count{method="GET",route="/api/sessions/:id",status_code="200"} 2',
    );
    expect(text).toContain(
      'http_server_request_duration_seconds_count{method="GET",route="/api/sessions/:id",status_code="404"} 1',
    );
    expect(text).toContain(
      'http_server_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"} 1',
    );
    expect(text).toContain(
      'http_server_request_duration_seconds_count{method="_OTHER",route="unmatched",status_code="405"} 1',
    );
    expect(text).not.toMatch(/sessions\/a|nope/);
  });
});
