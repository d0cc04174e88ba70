import { createServer, Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT } from '../support/db';

jest.setTimeout(120_000);

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}

/** OpenTelemetry: one user message is one trace across the gateway, NATS, the worker, the gate and the runner. */
describe('traces across the services (OTLP/HTTP)', () => {
  let collector: Server;
  let stack: Stack;
  const spans: Array<OtlpSpan & { service: string }> = [];

  beforeAll(async () => {
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          const doc = JSON.parse(body) as OtlpExport;
          for (const rs of doc.resourceSpans) {
            const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
            for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const port = (collector.address() as { port: number }).port;
    stack = await Stack.start({ root: ROOT, env: { SKALD_OTLP_ENDPOINT: `http://127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    await stack?.stop();
    await new Promise((r) => collector?.close(r));
  });

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
    const namesOf = (traceId: string) =>
      spans.filter((s) => s.traceId === traceId).map((s) => `${s.service}: ${s.name}`);
    // Each app exports its spans in batches, at its own pace: wait until the whole path has arrived.
    let trace: string | undefined;
    for (let i = 0; i < 100 && !trace; i++) {
      const submit = spans.find((s) => s.service === 'gateway' && s.name === 'session.submit request');
      if (submit && wanted.every((w) => namesOf(submit.traceId).includes(w))) trace = submit.traceId;
      if (!trace) await new Promise((r) => setTimeout(r, 200));
    }
    const submit = spans.find((s) => s.service === 'gateway' && s.name === 'session.submit request');
    expect(submit).toBeDefined();
    // the one trace holds the whole path, from the gateway to the approval service and the tool runner
    expect(namesOf(trace ?? submit!.traceId)).toEqual(expect.arrayContaining(wanted));
    const inTrace = spans.filter((s) => s.traceId === trace);
    // parent links hold across the wire: each handle span's parent is a request span of the trace
    const ids = new Set(inTrace.map((s) => s.spanId));
    for (const s of inTrace.filter((x) => x.name.endsWith(' handle'))) expect(ids.has(s.parentSpanId ?? '')).toBe(true);
  });
});
