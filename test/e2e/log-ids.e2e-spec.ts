import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { jsonLines } from '../support/log-lines';

jest.setTimeout(120_000);

/**
 * Log ids travel with the loggers the apps pass down (no async context): a turn with a routine
 * read and a write a human approves, at LOG_LEVEL debug; every line the session worker, the
 * approval service and the tool runner write about the turn's session or one of its calls names
 * the user, the session and the turn — and a call's lines name the call.
 */
describe('log ids: every line about a turn names its user, session and turn', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT, env: { LOG_LEVEL: 'debug' } });
    sim = new LlmSimAdminClient(stack.simUrl);
    db = await testDb();
  });
  afterAll(async () => {
    await stack?.stop();
    if (db) await assertInvariantsAndClose(db);
  });

  it('worker, approval service and tool runner', async () => {
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const user = await admin.createUser(`ids-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: 'web' });
    const hello = await ws.waitForType('hello');
    const m = `ids-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'ids.txt', content: 'x\n' } }] },
        { tool_calls: [{ name: 'read_file', arguments: { path: 'ids.txt' } }] },
        { content: `done ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    const card = await ws.waitFor((f: Frame) => f.type === 'pending_write', 60_000);
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f: Frame) => f.type === 'done' && String(f.content).includes(m), 60_000);
    ws.close();

    const sessionId = String(hello.session_id);
    const turnId = String(ws.frames.find((f) => f.type === 'user_message' && f.content === `go ${m}`)?.message_id);
    const calls = ws.frames.filter((f) => f.type === 'tool_start').map((f) => String(f.tool_call_id));
    expect(calls).toHaveLength(2);
    const userId = user.user!.id;
    const linesOf = (app: 'session-worker' | 'tool-runner' | 'approval-service') => jsonLines(stack.byName(app)[0]);
    const about = (l: Record<string, unknown>) => l.sessionId === sessionId || calls.includes(String(l.toolCallId));
    const seen: Record<string, string[]> = {};
    for (const app of ['session-worker', 'approval-service', 'tool-runner'] as const) {
      const lines = linesOf(app).filter(about);
      seen[app] = [...new Set(lines.map((l) => String(l.msg)))].sort();
      // 'human request resolved' too: the answer comes from the user, and the request remembers its turn.
      expect(lines.filter((l) => l.userId !== userId || l.sessionId !== sessionId || l.turnId !== turnId)).toEqual([]);
    }
    expect(seen).toEqual({
      'session-worker': expect.arrayContaining([
        'tool call awaits approval',
        'tool call ended',
        'tool call started',
        'turn ended',
        'turn started',
      ]),
      'approval-service': expect.arrayContaining([
        'human request registered',
        'human request resolved',
        'tool call checked',
      ]),
      'tool-runner': expect.arrayContaining(['tool call finished']),
    });
  });
});
