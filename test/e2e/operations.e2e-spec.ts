import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { REDIS_SERVICES, SKALD_SERVICES } from '@skald/contracts';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { jsonLines } from '../support/log-lines';

jest.setTimeout(180_000);

const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const planted = (kind: string) => `${kind}-${randomBytes(12).toString('hex')}`;

/**
 * Secrets never leave where they belong: an LLM API key, MCP credentials, a user's password, the JWT
 * and sealing keys are planted, a whole session is run (login, a failed login, a turn with commands
 * and an MCP call, REST listings), and the logs of all five apps, every API response and every WS
 * frame are scanned for them.
 */
describe('operations: secrets stay out of logs, responses and events; metrics show the work', () => {
  const SECRETS = {
    llmKey: planted('sk-llm'),
    mcpEnv: planted('mcp-env'),
    mcpHeader: planted('mcp-hdr'),
    password: planted('pw'),
    wrongPassword: planted('pw-wrong'),
  };
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let db: DataSource;
  const seen: string[] = [];
  /** The turn of the first test, as its user saw it: the WS frames, the user, the message. */
  let turn: { frames: Frame[]; userId: string; marker: string } | undefined;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: { LOG_LEVEL: 'info', PLANTED_LLM_KEY: SECRETS.llmKey },
      perApp: { 'tool-runner': { SKALD_SANDBOX_RO_BINDS: path.join(ROOT, 'node_modules') } },
      llmClients: (simUrl) => [{ name: 'main', baseUrl: simUrl, model: 'sim-model', apiKeyEnv: 'PLANTED_LLM_KEY' }],
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    db = await testDb();
  });
  afterAll(async () => {
    await stack?.stop();
    await assertInvariantsAndClose(db);
  });

  it('a whole session leaves no planted secret in any log, response or frame', async () => {
    const record = <T extends { status: number; body: unknown }>(r: T): T => {
      seen.push(JSON.stringify(r.body));
      return r;
    };
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const email = `s-${randomUUID()}@skald.test`;
    record(await admin.post('/api/admin/users', { email, password: SECRETS.password }));
    record(await new ApiClient(stack.gatewayUrl).post('/api/auth/login', { email, password: SECRETS.wrongPassword }));
    const user = await ApiClient.login(stack.gatewayUrl, email, SECRETS.password);
    record(
      await user.post('/api/mcp/servers', {
        name: 'everything',
        transport: 'stdio',
        command: 'node',
        args: [EVERYTHING, 'stdio'],
        env: { SERVICE_TOKEN: SECRETS.mcpEnv },
      }),
    );
    record(
      await user.post('/api/mcp/servers', {
        name: 'remote',
        transport: 'http',
        url: 'https://93.184.215.14/mcp',
        headers: { Authorization: `Bearer ${SECRETS.mcpHeader}` },
      }),
    );
    for (const p of ['/api/mcp/servers', '/api/admin/users', '/api/llm/clients', '/api/auth/tokens'])
      record(await (p === '/api/admin/users' ? admin : user).get(p));

    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: 'web' });
    await ws.waitForType('hello');
    const m = `sec-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        // what a sandboxed command can see of the service's environment
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'env; cat /proc/1/environ | tr "\\0" "\\n"' } }] },
        { tool_calls: [{ name: 'activate_tools', arguments: { groups: ['everything'] } }] },
        // a stdio server runs only once a human approved its start
        { tool_calls: [{ name: 'mcp__everything__skald_start', arguments: {} }] },
        { tool_calls: [{ name: 'mcp__everything__echo', arguments: { message: 'hello' } }] },
        { content: `all done ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `check ${m}` });
    // approve every card (the command, the MCP server's start, the MCP call) until the answer
    const answered = new Set<string>();
    const isDone = (f: Frame) => f.type === 'done' && String(f.content).includes(m);
    for (;;) {
      const next = await ws.waitFor(
        (f: Frame) =>
          isDone(f) ||
          ((f.type === 'pending_write' || f.type === 'approval_required') && !answered.has(String(f.request_id))),
        60_000,
      );
      if (isDone(next)) break;
      answered.add(String(next.request_id));
      ws.send({ type: 'approve_tool', request_id: next.request_id });
    }
    expect(answered.size).toBe(3);
    const cmd = ws.frames.find((f) => f.type === 'tool_done' && String(f.result).includes('PATH='));
    expect(cmd).toBeDefined(); // the command really printed its environment
    seen.push(JSON.stringify(ws.frames));
    turn = { frames: [...ws.frames], userId: user.user!.id, marker: m };
    ws.close();
    const models = (await sim.requests({ contains: m })).map((r) => JSON.stringify(r.body));
    expect(models.length).toBeGreaterThanOrEqual(4);

    // Everything we saw, everything the model saw, everything every app logged.
    const haystacks: Array<[string, string]> = [
      ['API responses and WS frames', seen.join('\n')],
      ['requests to the model', models.join('\n')],
      ...stack.processes
        .filter((p) => p.name !== 'llm-sim')
        .map((p): [string, string] => [`${p.instance} log`, p.logs.join('\n')]),
    ];
    const secrets: Record<string, string> = {
      ...SECRETS,
      jwtSecret: stack.env.SKALD_JWT_SECRET,
      sealingKey: stack.env.SKALD_SECRETS_KEY,
      adminPassword: stack.admin.password,
      // each app's own NATS and Redis password
      ...stack.serviceSecrets(),
    };
    // every app's NATS password and the Redis ones of the apps that use Redis were planted too
    expect(Object.keys(stack.serviceSecrets())).toHaveLength(SKALD_SERVICES.length + REDIS_SERVICES.length);
    const leaks: string[] = [];
    for (const [where, text] of haystacks)
      for (const [name, value] of Object.entries(secrets)) if (text.includes(value)) leaks.push(`${name} in ${where}`);
    expect(leaks).toEqual([]);
    // the logs are not empty: the scan looked at something (info level, JSON lines with ids)
    const workerLog = stack.byName('session-worker')[0].logs.join('\n');
    expect(workerLog).toContain(user.user!.id);
  });

  it("the turn's log lines in the worker, the tool runner and the approval service name its user, session, turn and tool calls", async () => {
    const { frames, userId, marker } = turn!;
    // the ids as the public API shows them: the session (hello), the turn (the id of the message
    // that started it, echoed as user_message), the command's tool call (tool_start)
    const sessionId = String(frames.find((f) => f.type === 'hello')?.session_id);
    const turnId = String(frames.find((f) => f.type === 'user_message' && f.content === `check ${marker}`)?.message_id);
    const starts = frames.filter((f) => f.type === 'tool_start');
    const cmdCallId = String(starts.find((f) => f.name === 'execute_cmd')?.tool_call_id);
    const mcpCallId = String(starts.find((f) => f.name === 'mcp__everything__echo')?.tool_call_id);
    expect([sessionId, turnId, cmdCallId, mcpCallId].every((id) => /^[0-9a-f-]{36}$/.test(id))).toBe(true);
    const linesOf = (app: 'session-worker' | 'tool-runner' | 'approval-service') => jsonLines(stack.byName(app)[0]);
    const ofTurn = { userId, sessionId, turnId };

    // session worker: the turn's start and end, and each step of the command's call
    const worker = linesOf('session-worker');
    expect(worker).toEqual(expect.arrayContaining([expect.objectContaining({ ...ofTurn, msg: 'turn started' })]));
    expect(worker).toEqual(
      expect.arrayContaining([expect.objectContaining({ ...ofTurn, outcome: 'final', msg: 'turn ended' })]),
    );
    const workerCmd = worker.filter((l) => l.toolCallId === cmdCallId);
    expect(workerCmd.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['tool call started', 'tool call awaits approval', 'tool call ended']),
    );
    expect(workerCmd.every((l) => l.turnId === turnId && l.sessionId === sessionId && l.userId === userId)).toBe(true);

    // tool runner: both calls of the turn, every line naming a call names the turn
    const runner = linesOf('tool-runner');
    for (const [toolCallId, tool] of [
      [cmdCallId, 'execute_cmd'],
      [mcpCallId, 'mcp__everything__echo'],
    ])
      expect(runner).toEqual(
        expect.arrayContaining([expect.objectContaining({ ...ofTurn, toolCallId, tool, msg: 'tool call finished' })]),
      );
    const runnerCalls = runner.filter((l) => l.toolCallId === cmdCallId || l.toolCallId === mcpCallId);
    expect(runnerCalls.every((l) => l.turnId === turnId && l.sessionId === sessionId)).toBe(true);

    // approval service: the gate's check and the human request of the command, then the answer
    const approvals = linesOf('approval-service').filter((l) => l.sessionId === sessionId);
    for (const msg of ['tool call checked', 'human request registered'])
      expect(approvals).toEqual(
        expect.arrayContaining([expect.objectContaining({ ...ofTurn, toolCallId: cmdCallId, msg })]),
      );
    expect(approvals).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ userId, toolCallId: cmdCallId, status: 'approved', msg: 'human request resolved' }),
      ]),
    );

    // no message body at info level: neither the user's message, the command, nor the model's answer
    const logs = ['session-worker', 'tool-runner', 'approval-service', 'gateway'] as const;
    for (const app of logs) {
      const text = stack.byName(app)[0].logs.join('\n');
      expect([`check ${marker}`, '/proc/1/environ', `all done ${marker}`].filter((b) => text.includes(b))).toEqual([]);
    }
  });

  it("the same session shows on every app's /metrics: sockets, fan-out, rounds, waits, model calls, decisions, tools", async () => {
    const scrape = async (app: 'gateway' | 'session-worker' | 'approval-service' | 'tool-runner' | 'scheduler') => {
      const res = await fetch(`${stack.byName(app)[0].url}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    };
    /** The value of one sample (the sum over the series matching every given label). */
    const value = (text: string, name: string, labels: Record<string, string> = {}): number =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
        .filter((l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const gateway = await scrape('gateway');
    expect(value(gateway, 'skald_event_fanout_seconds_count', { kind: 'session' })).toBeGreaterThan(5);
    expect(value(gateway, 'skald_event_fanout_seconds_count', { kind: 'ephemeral' })).toBeGreaterThan(0);
    expect(gateway).toMatch(/^skald_ws_connections(\{[^}]*\})? \d+$/m);
    const worker = await scrape('session-worker');
    expect(value(worker, 'skald_turns_started_total')).toBeGreaterThanOrEqual(1);
    expect(value(worker, 'skald_turns_finished_total')).toBeGreaterThanOrEqual(1);
    expect(value(worker, 'skald_rounds_total')).toBeGreaterThanOrEqual(4);
    expect(value(worker, 'skald_human_waits_total', { kind: 'approval' })).toBeGreaterThanOrEqual(2);
    expect(value(worker, 'skald_llm_request_seconds_count', { client: 'main', outcome: 'ok' })).toBeGreaterThanOrEqual(
      4,
    );
    expect(value(worker, 'skald_llm_tokens_total', { client: 'main', kind: 'input' })).toBeGreaterThan(0);
    expect(worker).toMatch(/^skald_inbox_pending(\{[^}]*\})? \d+$/m);
    const approvals = await scrape('approval-service');
    expect(value(approvals, 'skald_approval_decisions_total', { decision: 'require' })).toBeGreaterThanOrEqual(2);
    expect(value(approvals, 'skald_approval_wait_seconds_count', { action: 'approve' })).toBeGreaterThanOrEqual(2);
    const runner = await scrape('tool-runner');
    expect(value(runner, 'skald_tool_calls_total', { tool: 'execute_cmd' })).toBeGreaterThanOrEqual(1);
    const scheduler = await scrape('scheduler');
    expect(scheduler).toContain('process_cpu_seconds_total');
    // the BullMQ queue's depth, read from Redis at the scrape: every state, even when empty
    for (const state of ['waiting', 'active', 'delayed', 'failed'])
      expect(scheduler).toMatch(new RegExp(`^skald_scheduler_queue_jobs\\{[^}]*state="${state}"[^}]*\\} \\d+$`, 'm'));
  });
});
