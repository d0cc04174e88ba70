import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { processesWith } from '../../apps/tool-runner/src/testing-fixtures/host-processes';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

interface SimBody {
  messages: Array<{ role: string; content: unknown }>;
  tools?: Array<{ function: { name: string } }>;
}

/** A user's MCP server from REST to a tool call in a turn: granted, approved, bypassed, stopped. */
describe('MCP through the whole stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const TOKEN = `mcp-secret-${randomBytes(8).toString('hex')}`;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      perApp: { 'tool-runner': { SKALD_SANDBOX_RO_BINDS: path.join(ROOT, 'node_modules') } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    await stack?.stop();
    await assertInvariantsAndClose(db);
  });

  async function userWithServer(): Promise<{ api: ApiClient; ws: WsTestClient }> {
    const api = await admin.createUser(`m-${randomUUID()}@skald.test`, 'correct horse battery');
    const created = await api.post('/api/mcp/servers', {
      name: 'everything',
      transport: 'stdio',
      command: 'node',
      args: [EVERYTHING, 'stdio'],
      env: { EVERYTHING_TOKEN: TOKEN },
    });
    expect(created.status).toBe(201);
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    await ws.waitForType('hello');
    return { api, ws };
  }

  it('REST: a bad configuration is a 400 naming the field; a private address is refused; credentials are write-only', async () => {
    const api = await admin.createUser(`r-${randomUUID()}@skald.test`, 'correct horse battery');
    const bad = await api.post<{ error: { code: string; field?: string } }>('/api/mcp/servers', {
      name: 'Not Valid',
      transport: 'stdio',
      command: 'x',
    });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'name' } } });
    // A variable the dynamic loader acts on: refused, naming it (it would never reach a host process anyway).
    const preload = await api.post<{ error: { code: string; field?: string; message: string } }>('/api/mcp/servers', {
      name: 'evil',
      transport: 'stdio',
      command: 'node',
      env: { LD_PRELOAD: '/workspace/evil.so' },
    });
    expect(preload).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'env.LD_PRELOAD' } } });
    expect(preload.body.error.message).toContain('LD_PRELOAD is refused');
    const noUrl = await api.post<{ error: { field?: string } }>('/api/mcp/servers', { name: 'web', transport: 'http' });
    expect(noUrl).toMatchObject({ status: 400, body: { error: { field: 'url' } } });
    const loopback = await api.post<{ error: { code: string; field?: string; message: string } }>('/api/mcp/servers', {
      name: 'web',
      transport: 'http',
      url: 'http://127.0.0.1:6379/mcp',
    });
    expect(loopback).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'url' } } });
    expect(loopback.body.error.message).toContain('127.0.0.1');
    const ok = await api.post('/api/mcp/servers', {
      name: 'remote',
      transport: 'http',
      url: 'https://93.184.215.14/mcp',
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.status).toBe(201);
    const listed = await api.get<{ items: Array<Record<string, unknown>> }>('/api/mcp/servers');
    expect(listed.body.items).toEqual([expect.objectContaining({ name: 'remote', header_keys: ['Authorization'] })]);
    expect(JSON.stringify(listed.body)).not.toContain(TOKEN);
    expect((await api.request('DELETE', '/api/mcp/servers/remote')).status).toBe(204);
    expect((await api.request('DELETE', '/api/mcp/servers/remote')).status).toBe(404);
  });

  it('a stdio server runs nothing until a human approves its first use; granted, it offers a start tool, then its own tools; a server bypass covers the rest', async () => {
    const { ws } = await userWithServer();
    const m = `mcp-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'activate_tools', arguments: { groups: ['everything'] } }] },
        { tool_calls: [{ name: 'mcp__everything__skald_start', arguments: {} }] },
        { tool_calls: [{ name: 'mcp__everything__get-sum', arguments: { a: 19, b: 23 } }] },
        { tool_calls: [{ name: 'mcp__everything__echo', arguments: { message: 'no card for me' } }] },
        { content: `the sum is 42 ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `add with MCP ${m}` });
    const card = await ws.waitForType('approval_required');
    expect(card).toMatchObject({ tool_name: 'mcp__everything__skald_start' });
    // Registered, granted and offered to the model: still not one process runs the server's command.
    expect(processesWith(EVERYTHING)).toEqual([]);
    ws.send({
      type: 'approve_tool',
      request_id: card.request_id,
      bypass_secs: 0,
      bypass_scope: { mcp_server: 'everything' },
    });
    const started = await ws.waitFor((f) => f.type === 'tool_done' && f.tool_call_id === card.tool_call_id);
    expect(String(started.result)).toMatch(/MCP server everything is running with \d+ tools: .*get-sum/);
    const sum = await ws.waitFor((f) => f.type === 'tool_done' && String(f.result).includes('42'));
    expect(sum).toBeTruthy();
    const echo = await ws.waitFor((f) => f.type === 'tool_done' && String(f.result).includes('no card for me'));
    expect(echo).toBeTruthy();
    await ws.waitFor((f) => f.type === 'done' && String(f.content).includes(m));
    expect(ws.frames.filter((f) => f.type === 'approval_required')).toHaveLength(1);

    const bodies = (await sim.requests({ contains: m })).map((r) => r.body as SimBody);
    const toolNames = (b: SimBody) => (b.tools ?? []).map((t) => t.function.name);
    expect(toolNames(bodies[0])).not.toContain('mcp__everything__skald_start');
    expect(toolNames(bodies[1])).toContain('mcp__everything__skald_start');
    expect(toolNames(bodies[1])).not.toContain('mcp__everything__get-sum');
    expect(toolNames(bodies[2])).toEqual(expect.arrayContaining(['mcp__everything__get-sum', 'mcp__everything__echo']));
    // the server's credentials reach neither the model nor the client
    expect(JSON.stringify(bodies)).not.toContain(TOKEN);
    expect(JSON.stringify(ws.frames)).not.toContain(TOKEN);
    ws.close();
  });

  it("enabled_mcp_servers: only the caller's servers (400 naming the entry); pre-granted in the session, its async task and a cron run", async () => {
    const { api, ws } = await userWithServer();
    const stranger = await admin.createUser(`s-${randomUUID()}@skald.test`, 'correct horse battery');
    const sid = (await api.post<{ session_id: string }>('/api/sessions?source=web')).body.session_id;
    type Refusal = { status: number; body: { error: { code: string; field?: string; message: string } } };
    const put = (who: ApiClient, body: unknown, id = sid) =>
      who.request('PUT', `/api/sessions/${id}/run-context`, body) as Promise<Refusal>;
    const foreign = await put(api, { enabled_mcp_servers: ['everything', 'nope'] });
    expect(foreign).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_input', field: 'enabled_mcp_servers.1' } },
    });
    expect(foreign.body.error.message).toContain('nope');
    // another user's server of the same name is not the stranger's: refused before the session is looked at
    const strangerSid = (await stranger.post<{ session_id: string }>('/api/sessions?source=web')).body.session_id;
    const strangers = await put(stranger, { enabled_mcp_servers: ['everything'] }, strangerSid);
    expect(strangers).toMatchObject({ status: 400, body: { error: { field: 'enabled_mcp_servers.0' } } });
    // a disabled server of theirs would offer nothing: refused, saying so
    expect((await api.request('PATCH', '/api/mcp/servers/everything', { enabled: false })).status).toBe(200);
    const disabled = await put(api, { enabled_mcp_servers: ['everything'] });
    expect(disabled).toMatchObject({ status: 400, body: { error: { field: 'enabled_mcp_servers.0' } } });
    expect(disabled.body.error.message).toContain('everything is disabled');
    expect((await api.request('PATCH', '/api/mcp/servers/everything', { enabled: true })).status).toBe(200);
    const set = await put(api, { enabled_mcp_servers: ['everything'] });
    expect(set).toMatchObject({ status: 200, body: { enabled_mcp_servers: ['everything'] } });
    expect((await api.get(`/api/sessions/${sid}/run-context`)).body).toEqual(set.body);

    const m = `mcp-pre-${randomUUID()}`;
    await sim.script({
      match: `[P-${m}]`,
      replies: [
        {
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Look around [C-${m}]`, title: 'look', mode: 'async' },
            },
          ],
        },
        { content: `Started [D-${m}].` },
      ],
    });
    await sim.script({ match: `[C-${m}]`, replies: [{ content: 'nothing to see' }] });
    ws.send({ type: 'message', client_message_id: m, content: `use MCP [P-${m}]` });
    const card = await ws.waitForType('approval_required');
    expect(card).toMatchObject({ tool_name: 'execute_task' });
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f) => f.type === 'done' && String(f.content).includes(`[D-${m}]`));
    const toolNames = (b: SimBody) => (b.tools ?? []).map((t) => t.function.name);
    const [first] = (await sim.requests({ contains: `[P-${m}]` })).map((r) => r.body as SimBody);
    expect(toolNames(first)).toContain('mcp__everything__skald_start');
    expect(toolNames(first)).not.toContain('activate_tools');
    // the async task runs under its conversation's RunContext: the same servers, pre-granted
    const [task] = await until('the async task asks the model', async () => {
      const r = await sim.requests({ contains: `[C-${m}]` });
      return r.length > 0 ? r : null;
    });
    expect(toolNames(task.body as SimBody)).toContain('mcp__everything__skald_start');
    expect(toolNames(task.body as SimBody)).not.toContain('activate_tools');

    // a cron job: the same check, naming the entry where it sits in the body; its run pre-grants them
    const refused = await api.post<{ error: { code: string; field?: string } }>('/api/cron/jobs', {
      title: 'x',
      prompt: 'x',
      cron: '0 3 * * *',
      run_context: { enabled_mcp_servers: ['gone'] },
    });
    expect(refused).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_input', field: 'run_context.enabled_mcp_servers.0' } },
    });
    const job = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'with MCP',
      prompt: `Cron with MCP [J-${m}]`,
      cron: '0 3 * * *',
      enabled: false,
      run_context: { enabled_mcp_servers: ['everything'] },
    });
    expect(job.status).toBe(201);
    await sim.script({ match: `[J-${m}]`, replies: [{ content: 'cron done' }] });
    expect((await api.post(`/api/cron/jobs/${job.body.id}/run`)).status).toBe(202);
    const [run] = await until('the cron run asks the model', async () => {
      const r = await sim.requests({ contains: `[J-${m}]` });
      return r.length > 0 ? r : null;
    });
    expect(toolNames(run.body as SimBody)).toContain('mcp__everything__skald_start');
    expect(toolNames(run.body as SimBody)).not.toContain('activate_tools');
    ws.close();
  });

  it('PATCH changes a server in place: disabling stops its running process and its status says so; a changed command runs anew', async () => {
    const { api, ws } = await userWithServer();
    // this test's server processes: the ones that appear with its start (other tests' servers run until idle)
    const before = new Set(processesWith(EVERYTHING));
    let started: string[] = [];
    const mine = () => processesWith(EVERYTHING).filter((p) => started.includes(p));
    const sid = (await api.post<{ session_id: string }>('/api/sessions?source=web')).body.session_id;
    expect(
      (await api.request('PUT', `/api/sessions/${sid}/run-context`, { enabled_mcp_servers: ['everything'] })).status,
    ).toBe(200);
    const m = `mcp-patch-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [{ tool_calls: [{ name: 'mcp__everything__skald_start', arguments: {} }] }, { content: `started ${m}` }],
    });
    ws.send({ type: 'message', client_message_id: m, content: `start it ${m}` });
    const card = await ws.waitForType('approval_required');
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f) => f.type === 'done' && String(f.content).includes(m));
    started = processesWith(EVERYTHING).filter((p) => !before.has(p));
    expect(started.length).toBeGreaterThan(0);
    type Server = { name: string; enabled: boolean; status: string; tools_count: number };
    const patch = (name: string, body: unknown) =>
      api.request('PATCH', `/api/mcp/servers/${name}`, body) as Promise<{
        status: number;
        body: Server & { error: { field?: string } };
      }>;
    const listed = async () => (await api.get<{ items: Server[] }>('/api/mcp/servers')).body.items[0];
    expect(await listed()).toMatchObject({ status: 'ready', enabled: true });

    const off = await patch('everything', { enabled: false });
    expect(off).toMatchObject({ status: 200, body: { name: 'everything', enabled: false, status: 'disabled' } });
    await until('the server process to stop', async () => mine().length === 0, 15_000);
    expect(await listed()).toMatchObject({ enabled: false, status: 'disabled' });
    // its tools are gone from the offer while it is disabled
    const n = `mcp-off-${randomUUID()}`;
    await sim.script({ match: n, replies: [{ content: `nothing ${n}` }] });
    ws.send({ type: 'message', client_message_id: n, content: `anything? ${n}` });
    await ws.waitFor((f) => f.type === 'done' && String(f.content).includes(n));
    const [offOffer] = (await sim.requests({ contains: n })).map((r) => r.body as SimBody);
    expect((offOffer.tools ?? []).map((t) => t.function.name).filter((t) => t.startsWith('mcp__'))).toEqual([]);

    // a field of the other transport, and an unknown server, are refused
    expect(await patch('everything', { url: 'https://93.184.215.14/mcp' })).toMatchObject({
      status: 400,
      body: { error: { field: 'url' } },
    });
    expect((await patch('nope', { enabled: true })).status).toBe(404);
    expect((await patch('everything', {})).status).toBe(400);

    // enabled again with other arguments: a server not started since, its old tool list forgotten
    const back = await patch('everything', { enabled: true, args: [EVERYTHING, 'stdio'] });
    expect(back).toMatchObject({ status: 200, body: { enabled: true, status: 'stopped', tools_count: 0 } });
    expect(processesWith(EVERYTHING).filter((p) => !before.has(p))).toEqual([]);
    ws.close();
  });

  it('/stop cancels an MCP call in flight and the turn ends interrupted', async () => {
    const { ws } = await userWithServer();
    const m = `mcp-stop-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'activate_tools', arguments: { groups: ['everything'] } }] },
        // a stdio server runs only once a human approved its start
        { tool_calls: [{ name: 'mcp__everything__skald_start', arguments: {} }] },
        {
          tool_calls: [
            { name: 'mcp__everything__trigger-long-running-operation', arguments: { duration: 60, steps: 60 } },
          ],
        },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `long MCP job ${m}` });
    const start = await ws.waitForType('approval_required');
    expect(start).toMatchObject({ tool_name: 'mcp__everything__skald_start' });
    ws.send({ type: 'approve_tool', request_id: start.request_id });
    const card = await ws.waitFor((f) => f.type === 'approval_required' && f.request_id !== start.request_id);
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f) => f.type === 'tool_start' && f.tool_call_id === card.tool_call_id);
    await new Promise((r) => setTimeout(r, 1500));
    const stoppedAt = Date.now();
    ws.send({ type: 'cancel' });
    await ws.waitFor((f) => f.type === 'tool_cancelled' && f.tool_call_id === card.tool_call_id);
    await ws.waitFor((f) => f.type === 'error' && f.code === 'interrupted');
    expect(Date.now() - stoppedAt).toBeLessThan(30_000);
    const [row] = await db.query<Array<{ status: string }>>(`SELECT status FROM tool_calls WHERE id = $1`, [
      card.tool_call_id,
    ]);
    expect(row.status).toBe('cancelled');
    ws.close();
  });
});
