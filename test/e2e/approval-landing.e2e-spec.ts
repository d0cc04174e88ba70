import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

/**
 * Through the real stack: a write a human approves runs bound to where the gate
 * judged it to land when the card was shown. A workspace symlink swapped to point elsewhere
 * between the card and the approval — live, or while the turn is parked and resumed by another
 * lease — never redirects the write: it lands at the judged path or fails.
 */
describe('approval landing: a symlink swapped while the card waits', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: { SKALD_HUMAN_POLL_MS: '500' },
      perApp: { 'session-worker': { SKALD_PARK_AFTER: '3' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db) await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  /** A user whose workspace has `judged/`, `elsewhere/` and `proj/link → ../judged`. */
  async function setUp(): Promise<{ api: ApiClient; ws: WsTestClient; sessionId: string; home: string }> {
    const api = await admin.createUser(`al-${randomUUID()}@skald.test`, 'correct horse battery');
    const home = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    await mkdir(path.join(home, 'judged'), { recursive: true });
    await mkdir(path.join(home, 'elsewhere'), { recursive: true });
    await mkdir(path.join(home, 'proj'), { recursive: true });
    await symlink('../judged', path.join(home, 'proj/link'));
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    return { api, ws, sessionId, home };
  }

  async function swap(home: string): Promise<void> {
    await rm(path.join(home, 'proj/link'));
    await symlink('../elsewhere', path.join(home, 'proj/link'));
  }

  /** The write's end: done with the file at the judged path, or failed; never at the swapped target. */
  function expectBound(home: string, end: { type: string }, content: string): void {
    expect(existsSync(path.join(home, 'elsewhere/notes.md'))).toBe(false);
    if (end.type === 'tool_done') expect(readFileSync(path.join(home, 'judged/notes.md'), 'utf8')).toBe(content);
    else expect(end.type).toBe('tool_error');
  }

  async function ask(ws: WsTestClient, m: string, content: string) {
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: '/workspace/proj/link/notes.md', content } }] },
        { content: `written ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `write the notes ${m}` });
    const card = await ws.waitForType('pending_write');
    // The human sees where it lands, not only the path the model named.
    expect(card).toMatchObject({
      path: '/workspace/proj/link/notes.md',
      new_content: content,
      lands_at: '/workspace/judged/notes.md',
    });
    return card;
  }

  it('live: swapped after the card, then approved — the write does not follow the new link', async () => {
    const { ws, home } = await setUp();
    const m = `live-${randomUUID()}`;
    const content = `notes ${m}`;
    const card = await ask(ws, m, content);
    await swap(home);
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    const end = await ws.waitFor(
      (f) => (f.type === 'tool_done' || f.type === 'tool_error') && f.tool_call_id === card.tool_call_id,
      20_000,
    );
    expectBound(home, end, content);
    ws.close();
  });

  it('parked: swapped while the turn waits without a lease, approved — the resumed run is bound to the stored landing', async () => {
    const { api, ws, sessionId, home } = await setUp();
    const m = `park-${randomUUID()}`;
    const content = `parked notes ${m}`;
    const card = await ask(ws, m, content);
    await until('the turn to park', async () => {
      const rows: Array<{ turn_state: string; owner: string | null }> = await db.query(
        `SELECT s.turn_state, l.owner FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id WHERE s.id = $1`,
        [sessionId],
      );
      return rows[0]?.turn_state === 'parked' && rows[0].owner === null ? true : null;
    });
    const [row] = await db.query<Array<{ status: string; judged_landing: string[] | null }>>(
      `SELECT status, judged_landing FROM tool_calls WHERE id = $1`,
      [card.tool_call_id],
    );
    expect(row).toEqual({ status: 'awaiting_human', judged_landing: ['/workspace/judged/notes.md'] });
    const inbox = await api.get<{ approvals: Array<{ request_id: string; lands_at?: string }> }>('/api/inbox');
    expect(inbox.body.approvals).toEqual([
      expect.objectContaining({ request_id: card.request_id, lands_at: '/workspace/judged/notes.md' }),
    ]);
    await swap(home);
    const r = await api.post(`/api/tools/${String(card.tool_call_id)}/resolve`, { action: 'approve' });
    expect(r.status).toBe(200);
    const end = await ws.waitFor(
      (f) => (f.type === 'tool_done' || f.type === 'tool_error') && f.tool_call_id === card.tool_call_id,
      20_000,
    );
    expectBound(home, end, content);
    ws.close();
  });
});
