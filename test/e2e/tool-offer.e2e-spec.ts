import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

interface ChatBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
}

/**
 * Execution enforces the offer, through the whole stack: a sub-agent cannot start an async job,
 * and an agent whose filter denies read_file cannot read a file, whatever the model sends.
 */
describe('tools that were not offered are never run', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const SOURCE = 'offer';
  const NOTE = 'tool offer test';

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    // Delegation needs no human here: what stops the sub-agent must be the offer, not the gate.
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_task', $2, 'allow', 1, $3, 'test rule')`,
      [randomUUID(), SOURCE, NOTE],
    );
  });

  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  const user = () => admin.createUser(`o-${randomUUID()}@skald.test`, 'correct horse battery');
  const callsOf = (sessionId: string) =>
    db.query<Array<{ name: string; status: string; text: string | null; frame_id: string }>>(
      `SELECT name, status, COALESCE(error, result) AS text, frame_id FROM tool_calls WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
  const requestsWith = async (marker: string): Promise<ChatBody[]> =>
    (await sim.requests({ contains: marker })).filter((r) => r.status === 200).map((r) => r.body as ChatBody);
  const toolNames = (b: ChatBody): string[] => (b.tools ?? []).map((t) => t.function.name);

  it('a sub-agent cannot start an async job: its execute_task ends as tool_error and no job exists', async () => {
    const api = await user();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    const m = randomUUID();
    await sim.script({
      match: `[P-${m}]`,
      matchIn: 'last_user',
      replies: [
        {
          content: '',
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Look into it [C-${m}]`, title: 'Look' },
            },
          ],
        },
        { content: `parent done ${m}` },
      ],
    });
    await sim.script({
      match: `[C-${m}]`,
      matchIn: 'last_user',
      replies: [
        {
          content: '',
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: 'run forever in the background', mode: 'async' },
            },
          ],
        },
        { content: 'child done' },
      ],
    });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Please [P-${m}]` });
    const done = await ws.waitFor((f) => f.type === 'done' && f.content === `parent done ${m}`, 90_000);
    expect(done).toBeDefined();

    const calls = await callsOf(sessionId);
    expect(calls.map((c) => [c.name, c.status])).toEqual([
      ['execute_task', 'done'],
      ['execute_task', 'failed'],
    ]);
    expect(calls[1].text).toContain('tool execute_task is not available to this agent');
    const jobs = await db.query<Array<{ n: string }>>(
      `SELECT count(*)::text AS n FROM scheduled_jobs WHERE user_id = (SELECT user_id FROM sessions WHERE id = $1)`,
      [sessionId],
    );
    expect(jobs[0].n).toBe('0');
    const childRequests = (await requestsWith(`[C-${m}]`)).filter((b) => !toolNames(b).includes('execute_task'));
    expect(childRequests.length).toBeGreaterThanOrEqual(1);
    ws.close();
  });

  it('an agent whose filter denies read_file cannot read a file the model names', async () => {
    const api = await user();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    const m = randomUUID();
    const secret = `TOPSECRET-${m}`;
    // The seed allows writes to the user's own memory: the file exists before main is restricted.
    await sim.script({
      match: `[W-${m}]`,
      matchIn: 'last_user',
      replies: [
        {
          content: '',
          tool_calls: [{ name: 'write_file', arguments: { path: 'user-memory/secret.md', content: secret } }],
        },
        { content: `written ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: `w-${m}`, content: `Write it [W-${m}]` });
    await ws.waitFor((f) => f.type === 'done' && f.content === `written ${m}`, 60_000);

    const put = await api.request('PUT', '/api/agents/main', { meta: { tools: { allow: [], deny: ['read_file'] } } });
    expect(put.status).toBe(200);
    await sim.script({
      match: `[R-${m}]`,
      matchIn: 'last_user',
      replies: [
        { content: '', tool_calls: [{ name: 'read_file', arguments: { path: 'user-memory/secret.md' } }] },
        { content: `read attempted ${m}` },
      ],
    });
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: `r-${m}`, content: `Read it [R-${m}]` });
    await ws.waitFor((f) => f.type === 'done' && f.content === `read attempted ${m}`, 60_000, from);

    const calls = await callsOf(sessionId);
    expect(calls.map((c) => [c.name, c.status])).toEqual([
      ['write_file', 'done'],
      ['read_file', 'failed'],
    ]);
    expect(calls[1].text).toContain('tool read_file is not available to this agent');
    const error = ws.frames.slice(from).find((f) => f.type === 'tool_error');
    expect(JSON.stringify(error)).toContain('tool read_file is not available to this agent');
    const requests = await requestsWith(`[R-${m}]`);
    expect(requests.length).toBe(2);
    for (const r of requests) expect(toolNames(r)).not.toContain('read_file');
    // What the model got back for its read is the refusal, not the file (the secret is in its
    // history only as the argument of its own earlier write).
    const toolMessages = requests[1].messages.filter((x) => x.role === 'tool');
    expect(toolMessages.at(-1)?.content).toBe('Error: tool read_file is not available to this agent');
    expect(toolMessages.map((x) => String(x.content)).join('\n')).not.toContain(secret);
    ws.close();
  });
});
