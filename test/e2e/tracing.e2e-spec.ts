import { expect } from '@jest/globals';
import { createServer, Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT } from '../support/db';
import { jsonLines } from '../support/log-lines';
import { until } from '../support/until';

jest.setTimeout(180_000);

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
}
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}
type Collected = OtlpSpan & { service: string; attrs: Record<string, unknown> };

const APPS = ['gateway', 'session-worker', 'approval-service', 'tool-runner', 'scheduler'];

function plain(v: OtlpValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}

/**
 * OpenTelemetry through the standard variables (OTLP/HTTP JSON to a local receiver): one user
 * message is one trace across the gateway, NATS, the worker, the gate and the runner; one turn
 * started over REST and run by the scheduler is one connected trace across the five apps, with
 * HTTP, Postgres, Redis, NATS and LLM (GenAI) spans; every REST call has a request id (echoed),
 * an access-log line and RED metrics by route template.
 */
describe('traces across the services (OTLP/HTTP)', () => {
  let collector: Server;
  let stack: Stack;
  const spans: Collected[] = [];

  beforeAll(async () => {
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          const doc = JSON.parse(body) as OtlpExport;
          for (const rs of doc.resourceSpans) {
            const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
            for (const ss of rs.scopeSpans) {
              for (const s of ss.spans) {
                const attrs = Object.fromEntries((s.attributes ?? []).map((a) => [a.key, plain(a.value)]));
                spans.push({ ...s, service, attrs });
              }
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const port = (collector.address() as { port: number }).port;
    stack = await Stack.start({
      root: ROOT,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '300',
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await new Promise((r) => collector?.close(r));
  });

  const inTrace = (traceId: string) => spans.filter((s) => s.traceId === traceId);
  const namesOf = (traceId: string) => inTrace(traceId).map((s) => `${s.service}: ${s.name}`);

  it('a message that reads a file is one trace: gateway → session worker → approval service and tool runner', async () => {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const user = await admin.createUser(`t-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: 'web' });
    await ws.waitForType('hello');
    const m = `trace-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [{ tool_calls: [{ name: 'list_files', arguments: { path: '.' } }] }, { content: `listed ${m}` }],
    });
    ws.send({ type: 'message', client_message_id: m, content: `list ${m}` });
    await ws.waitFor((f) => f.type === 'done' && String(f.content).includes(m), 30_000);
    ws.close();

    const wanted = [
      'gateway: session.submit request',
      'session-worker: session.submit handle',
      'session-worker: approval.check request',
      'approval-service: approval.check handle',
      'session-worker: tools.exec request',
      'tool-runner: tools.exec handle',
    ];
    // Each app exports its spans in batches, at its own pace: wait until the whole path has arrived,
    // and with it the request span of every handle span that has (the handler's app may export first).
    const parentsIn = (traceId: string) => {
      const ids = new Set(inTrace(traceId).map((s) => s.spanId));
      return inTrace(traceId)
        .filter((x) => x.name.endsWith(' handle'))
        .every((h) => ids.has(h.parentSpanId ?? ''));
    };
    const trace = await until('the message path in one trace', async () => {
      const submit = spans.find((s) => s.service === 'gateway' && s.name === 'session.submit request');
      return submit && wanted.every((w) => namesOf(submit.traceId).includes(w)) && parentsIn(submit.traceId)
        ? submit.traceId
        : null;
    });
    // the one trace holds the whole path, from the gateway to the approval service and the tool runner
    expect(namesOf(trace)).toEqual(expect.arrayContaining(wanted));
    // parent links hold across the wire: each handle span's parent is a request span of the trace
    const ids = new Set(inTrace(trace).map((s) => s.spanId));
    for (const s of inTrace(trace).filter((x) => x.name.endsWith(' handle')))
      expect(ids.has(s.parentSpanId ?? '')).toBe(true);
  });

  it('a turn started over REST and run by the scheduler is one connected trace across the five apps', async () => {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const user = await admin.createUser(`c-${randomUUID()}@skald.test`, 'correct horse battery');
    const m = randomUUID();
    await sim.script({
      match: `[T-${m}]`,
      replies: [{ tool_calls: [{ name: 'list_files', arguments: { path: '.' } }] }, { content: `listed ${m}` }],
    });
    // once a year: only "run now" fires it here
    const created = await user.post<{ id: string }>('/api/cron/jobs', {
      title: 'Trace',
      prompt: `List my files [T-${m}]`,
      cron: '0 3 1 1 *',
      timezone: 'UTC',
    });
    expect(created.status).toBe(201);
    const reqId = `e2e-${m}`;
    const run = await user.request('POST', `/api/cron/jobs/${created.body.id}/run`, {}, { 'x-request-id': reqId });
    expect(run.status).toBe(202);
    // the request id the caller chose comes back (well-formed ids are kept)
    expect(run.headers.get('x-request-id')).toBe(reqId);

    const route = '/api/cron/jobs/:id/run';
    const root = await until('the gateway span of the run request', async () =>
      spans.find((s) => s.service === 'gateway' && s.name === `POST ${route}`),
    );
    const traceId = root.traceId;
    /** What the trace still lacks (empty: complete). */
    const missing = (all: Collected[]): string[] => {
      const ids = new Set(all.map((s) => s.spanId));
      const lacks = APPS.filter((a) => !all.some((s) => s.service === a)).map((a) => `a span from ${a}`);
      if (!all.some((s) => s.service === 'tool-runner' && s.name === 'tools.exec handle'))
        lacks.push('tools.exec handle');
      if (all.filter((s) => s.attrs['gen_ai.operation.name'] === 'chat').length < 2) lacks.push('two chat spans');
      const orphans = all.filter((s) => s !== root && !ids.has(s.parentSpanId ?? ''));
      if (orphans.length > 0) lacks.push(`parents of ${orphans.map((s) => `${s.service}: ${s.name}`).join(', ')}`);
      return lacks;
    };
    let lacking: string[] = [];
    const trace = await until('the turn run by the scheduler in one connected trace', async () => {
      lacking = missing(inTrace(traceId));
      return lacking.length === 0 ? inTrace(traceId) : null;
    }).catch((e: Error) => {
      throw new Error(`${e.message}; still missing: ${lacking.join('; ')}`);
    });

    // one root: the gateway's HTTP server span; every other span's parent is in the trace
    expect(trace.filter((s) => !s.parentSpanId)).toEqual([expect.objectContaining({ spanId: root.spanId })]);
    expect(root).toMatchObject({ kind: 2, attrs: expect.objectContaining({ 'http.route': route }) });
    // spans from all five apps
    expect([...new Set(trace.map((s) => s.service))].sort()).toEqual([...APPS].sort());
    const has = (what: string, p: (s: Collected) => boolean) =>
      expect({ what, found: trace.some(p) }).toEqual({ what, found: true });
    // NATS hops: gateway → scheduler → session worker → approval service and tool runner
    has('gateway: cron.jobs.run request', (s) => s.service === 'gateway' && s.name === 'cron.jobs.run request');
    has('scheduler: cron.jobs.run handle', (s) => s.service === 'scheduler' && s.name === 'cron.jobs.run handle');
    has(
      'approval-service: approval.check handle',
      (s) => s.service === 'approval-service' && s.name === 'approval.check handle',
    );
    // Postgres in the scheduler (the fence), the worker (the turn) and the gateway (the job's owner)
    for (const app of ['scheduler', 'session-worker']) {
      has(`${app}: a postgresql span`, (s) => s.service === app && s.attrs['db.system'] === 'postgresql');
    }
    // Redis: a turn's own writes (the LLM health record) are throttled, so a turn need not make one;
    // the login's throttle counter does, inside the login request's trace
    const inLogin = await until('a redis span inside a login request trace', async () =>
      spans.find(
        (r) =>
          r.attrs['db.system'] === 'redis' &&
          r.parentSpanId &&
          spans.some((s) => s.traceId === r.traceId && s.name.startsWith('POST /api/auth/')),
      ),
    );
    expect(inLogin.parentSpanId).toBeTruthy();
    // each LLM call: GenAI conventions (model, tokens, finish reason), never the messages
    const chats = trace.filter((s) => s.attrs['gen_ai.operation.name'] === 'chat');
    expect(chats.map((s) => s.attrs['gen_ai.response.finish_reasons'])).toEqual(
      expect.arrayContaining([['tool_calls'], ['stop']]),
    );
    for (const c of chats) {
      expect(c).toMatchObject({ service: 'session-worker', kind: 3 });
      expect(c.name).toBe(`chat ${String(c.attrs['gen_ai.request.model'])}`);
      expect(c.attrs['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
      expect(c.attrs['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
    }
    // nothing secret or private in any span: no bearer token, no prompt, no answer
    const dump = JSON.stringify(trace);
    expect(dump).not.toContain(user.token);
    expect(dump).not.toContain(`List my files`);
    expect(dump).not.toContain(`listed ${m}`);

    // the access-log line of the request, under the id the caller chose
    // the line is written when the response ends: it may come just after the client has read it
    const logged = await until('the access-log line of the run request', async () =>
      jsonLines(stack.byName('gateway')[0]).find((l) => l.reqId === reqId),
    );
    expect(logged).toMatchObject({
      msg: 'http request',
      method: 'POST',
      route,
      status: 202,
      durationMs: expect.any(Number),
      traceId,
    });
  });

  it('an ill-formed request id is replaced; the access log and RED metrics name the route template, never the path', async () => {
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const id = randomUUID();
    const r = await admin.request('GET', `/api/cron/runs?job_id=${id}&token=s3cret-${id}`, undefined, {
      'x-request-id': 'two words',
    });
    const reqId = r.headers.get('x-request-id') ?? '';
    expect(reqId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const line = await until('the access-log line of the request', async () =>
      jsonLines(stack.byName('gateway')[0]).find((l) => l.reqId === reqId),
    );
    expect(line).toMatchObject({ method: 'GET', route: '/api/cron/runs', status: r.status });
    // the query string (here a would-be token) is in no log line and in no span
    expect(stack.byName('gateway')[0].logs.join('\n')).not.toContain(`s3cret-${id}`);
    await until('the span of the request', async () => spans.find((s) => s.name === 'GET /api/cron/runs'));
    expect(JSON.stringify(spans)).not.toContain(`s3cret-${id}`);

    const metrics = await admin.request('GET', '/metrics');
    const text = String(metrics.body);
    // rate and errors: the count by route template and status; duration: the buckets
    expect(text).toMatch(
      new RegExp(
        `^http_server_request_duration_seconds_count\\{service="gateway",method="GET",route="/api/cron/runs",status_code="${r.status}"\\} [1-9]`,
        'm',
      ),
    );
    expect(text).toMatch(
      /^http_server_request_duration_seconds_bucket\{le="0\.1",service="gateway",method="GET",route="\/api\/cron\/runs"/m,
    );
    // no series per raw path
    expect(text).not.toContain(id);
  });
});
