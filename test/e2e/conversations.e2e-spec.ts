import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const PASSWORD = 'correct horse battery';

interface SimMessage {
  role: string;
  content: unknown;
}
const text = (m: SimMessage): string => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
/** Percent-encodes the UTF-8 bytes of a string (a lone surrogate as U+FFFD, as a browser sends it). */
const enc = (s: string): string =>
  [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

/**
 * Conversations over REST and WS against the whole stack: titles written by the model after the
 * first exchange, rename, search, export, reopen, delete; regenerate and edit-and-resend with what
 * the model receives read from llm-sim's request log; the model chosen per conversation.
 */
describe('conversations: titles, search, export, reopen, delete, regenerate, edit, model choice', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    console.log(`conversations property seed ${SEED} (replay: FC_SEED=${SEED})`);
    stack = await Stack.start({
      root: ROOT,
      env: { SKALD_TITLES: 'on' },
      llmClients: (simUrl) => [
        // AUTO prefers the operator's priority: `primary`
        {
          name: 'primary',
          baseUrl: simUrl,
          model: 'sim-primary',
          apiKeyEnv: 'OPENAI_API_KEY',
          strength: 'high',
          priority: 1,
        },
        {
          name: 'backup',
          baseUrl: simUrl,
          model: 'sim-backup',
          apiKeyEnv: 'OPENAI_API_KEY',
          strength: 'medium',
          priority: 2,
        },
      ],
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    // Registered first, so a title request is answered here whatever marker its text carries.
    await sim.script({
      match: 'Write a short title',
      repeatLast: true,
      replies: [{ content: '"Planning the launch."' }],
    });
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  const user = () => admin.createUser(`c-${randomUUID()}@skald.test`, PASSWORD);
  const socket = async (api: ApiClient) => {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'web' });
    const hello = await ws.waitForType('hello');
    await ws.waitForType('turn_running');
    return { ws, sessionId: hello.session_id as string };
  };
  /** Sends a message and waits for the `done` that answers it. */
  const ask = async (ws: WsTestClient, content: string): Promise<Frame> => {
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: randomUUID(), content });
    return ws.waitFor((f) => f.type === 'done', 30_000, from);
  };
  const modelSaw = async (marker: string, nth: number): Promise<SimMessage[]> => {
    const reqs = (await sim.requests({ contains: marker })).filter(
      (r) => !JSON.stringify(r.body).includes('Write a short title'),
    );
    return ((reqs[nth]?.body as { messages?: SimMessage[] } | undefined)?.messages ?? []).filter(
      (m) => (m.role === 'user' || m.role === 'assistant') && text(m).includes(marker),
    );
  };
  const rows = async (table: string, sessionId: string): Promise<number> =>
    Number(
      (await db.query<Array<{ n: string }>>(`SELECT count(*) AS n FROM ${table} WHERE session_id = $1`, [sessionId]))[0]
        .n,
    );

  it('the title is written by the model from the first exchange in the background; a rename wins over it', async () => {
    const alice = await user();
    const { ws, sessionId } = await socket(alice);
    const m = `title-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `We launch on Monday ${m}` }, { content: 'second answer' }] });
    await ask(ws, `When do we launch? ${m}`);
    const listed = await until('a generated title', async () => {
      const r = await alice.get<{ items: Array<{ id: string; title: string | null }> }>('/api/sessions?source=web');
      return r.body.items.find((s) => s.id === sessionId && s.title);
    });
    expect(listed.title).toBe('Planning the launch');
    const titleRequest = (await sim.requests({ contains: 'Write a short title' })).find((r) =>
      JSON.stringify(r.body).includes(m),
    );
    expect(JSON.stringify(titleRequest?.body)).toContain(`When do we launch? ${m}`);
    expect(JSON.stringify(titleRequest?.body)).toContain(`We launch on Monday ${m}`);
    expect((titleRequest?.body as { model: string }).model).toBe('sim-primary');

    expect((await alice.request('PATCH', `/api/sessions/${sessionId}`, { title: '  Launch plan  ' })).status).toBe(200);
    await ask(ws, `more ${m}`);
    const after = await alice.get<{ items: Array<{ id: string; title: string }> }>('/api/sessions?source=web');
    expect(after.body.items.find((s) => s.id === sessionId)?.title).toBe('Launch plan');
    expect((await alice.request('PATCH', `/api/sessions/${sessionId}`, { title: '' })).status).toBe(400);
    expect((await alice.request('PATCH', `/api/sessions/${sessionId}`, { title: 'x'.repeat(201) })).status).toBe(400);
    ws.close();
  });

  it("another user's session id is 404 on every conversation route, and nothing of it changes", async () => {
    const alice = await user();
    const bob = await user();
    const { ws, sessionId } = await socket(alice);
    const m = `foreign-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `secret answer ${m}` }] });
    const done = await ask(ws, `secret question ${m}`);
    const userMessage = ws.frames.find((f) => f.type === 'user_message' && f.session_id === sessionId);
    const attempts: Array<[string, string, unknown?]> = [
      ['PATCH', `/api/sessions/${sessionId}`, { title: 'mine now' }],
      ['DELETE', `/api/sessions/${sessionId}`],
      ['GET', `/api/sessions/${sessionId}/export?format=markdown`],
      ['GET', `/api/sessions/${sessionId}/export?format=json`],
      ['POST', `/api/sessions/${sessionId}/activate`, {}],
      ['GET', `/api/sessions/${sessionId}`],
      [
        'POST',
        `/api/web/messages/${String(userMessage?.message_id)}/edit`,
        { content: 'x', client_message_id: randomUUID() },
      ],
    ];
    for (const [method, url, body] of attempts) {
      const r = await bob.request(method, url, body);
      expect({ method, url, status: r.status }).toEqual({ method, url, status: 404 });
      expect(JSON.stringify(r.body)).not.toContain('secret');
    }
    const search = await bob.get<{ total: number }>(`/api/sessions?q=${encodeURIComponent('secret question')}`);
    expect(search.body.total).toBe(0);
    // alice's conversation is as it was
    const detail = await alice.get<{ messages: Array<{ kind: string; content?: string }> }>(
      `/api/sessions/${sessionId}`,
    );
    expect(detail.body.messages.map((r) => r.content)).toEqual([`secret question ${m}`, done.content]);
    expect(
      (await alice.get<{ items: Array<{ title: string | null }> }>('/api/sessions')).body.items[0]?.title,
    ).not.toBe('mine now');
    ws.close();
  });

  it('full-text search: tenant-scoped, one hit per conversation with a snippet, paginated', async () => {
    const alice = await user();
    const bob = await user();
    const word = `zebra${randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    const { ws } = await socket(alice);
    for (let n = 0; n < 3; n++) {
      const m = `search-${randomUUID()}`;
      await sim.script({ match: m, replies: [{ content: `ok ${m}` }] });
      await ask(ws, `the striped ${word} number ${n} ${m}`);
      ids.push(
        (await alice.get<{ items: Array<{ id: string; is_active: boolean }> }>('/api/sessions')).body.items.find(
          (s) => s.is_active,
        )!.id,
      );
      if (n < 2) {
        const from = ws.frames.length;
        ws.send({ type: 'message', client_message_id: randomUUID(), content: '/new' });
        await ws.waitFor((f) => f.type === 'new_session', 10_000, from);
      }
    }
    // bob says the same word: alice never sees his conversation
    const bobWs = await socket(bob);
    const bm = `bob-${randomUUID()}`;
    await sim.script({ match: bm, replies: [{ content: 'ok' }] });
    await ask(bobWs.ws, `my ${word} too ${bm}`);

    type Hits = { items: Array<{ id: string; snippet: string; title: string | null }>; total: number; page: number };
    const p1 = await alice.get<Hits>(`/api/sessions?q=${word}&per_page=2`);
    expect(p1.status).toBe(200);
    expect(p1.body.total).toBe(3);
    expect(p1.body.items).toHaveLength(2);
    const p2 = await alice.get<Hits>(`/api/sessions?q=${word}&per_page=2&page=2`);
    expect(p2.body.items).toHaveLength(1);
    expect(new Set([...p1.body.items, ...p2.body.items].map((h) => h.id))).toEqual(new Set(ids));
    expect(p1.body.items[0].snippet).toContain(word);
    // web-search syntax: a phrase, an exclusion
    expect((await alice.get<Hits>(`/api/sessions?q=${encodeURIComponent(`"${word} number 1"`)}`)).body.total).toBe(1);
    expect((await alice.get<Hits>(`/api/sessions?q=${encodeURIComponent(`${word} -number`)}`)).body.total).toBe(0);
    // only the user's own words: the model's answers are not searched
    expect((await alice.get<Hits>(`/api/sessions?q=ok`)).body.total).toBe(0);
    const bobHits = await bob.get<Hits>(`/api/sessions?q=${word}`);
    expect(bobHits.body.total).toBe(1);
    expect(ids).not.toContain(bobHits.body.items[0].id);
    ws.close();
    bobWs.ws.close();
  });

  it('generated search strings (tsquery syntax, unicode, NUL) never answer 5xx', async () => {
    const alice = await user();
    const { ws } = await socket(alice);
    const m = `fuzz-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'ok' }] });
    await ask(ws, `a b:* & | ! <-> () 'quoted' \\ ${m}`);
    const syntax = fc.constantFrom(
      '&',
      '|',
      '!',
      '<->',
      '<2>',
      ':*',
      ':A',
      '(',
      ')',
      "'",
      '"',
      '\\',
      '-',
      'or',
      'OR',
      ' ',
      '\u0000',
      '\ud800',
      '\u2028',
      '\ufeff',
      'a',
      'zebra',
      '*',
      '%',
      '#',
      '?',
    );
    const q = fc.oneof(
      fc.array(syntax, { minLength: 0, maxLength: 30 }).map((a) => a.join('')),
      fc.string({ unit: 'binary', maxLength: 220 }),
    );
    let requests = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(q, fc.integer({ min: -2, max: 2000 }), async (words, page) => {
        const r = await alice.request('GET', `/api/sessions?q=${enc(words)}&page=${page}`);
        requests++;
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        expect([200, 400]).toContain(r.status);
      }),
      { seed: SEED, numRuns: 1500 },
    );
    // query-string shapes: arrays, objects, repeated keys, invalid percent-encoding, raw bytes
    for (const raw of [
      'q[]=a',
      'q[$ne]=a',
      'q=a&q=b',
      'q=%ff%fe',
      'q=%',
      'q=%E0%A4%A',
      'q=' + 'a'.repeat(5000),
      'q=%00',
      'q=a&per_page=0',
      'q=a&per_page=101',
      'q=a&source=NOT_A_SOURCE',
    ]) {
      const r = await alice.request('GET', `/api/sessions?${raw}`);
      requests++;
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      expect({ raw: raw.slice(0, 40), status: r.status < 500 }).toEqual({ raw: raw.slice(0, 40), status: true });
    }
    console.log(JSON.stringify({ search_requests: requests, statuses: Object.fromEntries(statuses) }));
    ws.close();
  });

  it('export as Markdown and JSON: a download of what the chat shows', async () => {
    const alice = await user();
    const { ws, sessionId } = await socket(alice);
    const m = `export-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `## Answer\nwith **markdown** ${m}` }] });
    await ask(ws, `# not a heading ${m}`);
    const md = await alice.request('GET', `/api/sessions/${sessionId}/export?format=markdown`);
    expect(md.status).toBe(200);
    expect(md.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(md.headers.get('content-disposition')).toMatch(/^attachment; filename="skald-[a-z0-9-]+\.md"$/);
    expect(md.headers.get('x-content-type-options')).toBe('nosniff');
    const doc = String(md.body);
    expect(doc).toMatch(/## You \([^)]+\)\n\n```text\n# not a heading/);
    expect(doc).toContain(`## Answer\nwith **markdown** ${m}`);
    const json = await alice.request('GET', `/api/sessions/${sessionId}/export?format=json`);
    expect(json.status).toBe(200);
    expect(json.headers.get('content-disposition')).toMatch(/\.json"$/);
    const body = json.body as { session: { id: string }; messages: Array<{ role: string; content: string }> };
    expect(body.session.id).toBe(sessionId);
    expect(body.messages.map((x) => [x.role, x.content])).toEqual([
      ['user', `# not a heading ${m}`],
      ['assistant', `## Answer\nwith **markdown** ${m}`],
    ]);
    expect((await alice.request('GET', `/api/sessions/${sessionId}/export?format=html`)).status).toBe(400);
    ws.close();
  });

  it('/new keeps the old conversation; reopening it makes it active again and the model continues it', async () => {
    const alice = await user();
    const { ws, sessionId: first } = await socket(alice);
    const m = `reopen-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `first answer ${m}` }, { content: `continued ${m}` }] });
    await ask(ws, `first question ${m}`);
    let from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: randomUUID(), content: '/new' });
    const second = (await ws.waitFor((f) => f.type === 'new_session', 10_000, from)).session_id as string;
    expect(second).not.toBe(first);

    from = ws.frames.length;
    const r = await alice.post<{ session_id: string; source: string }>(`/api/sessions/${first}/activate`);
    expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { session_id: first, source: 'web' } });
    await ws.waitFor((f) => f.type === 'new_session' && f.session_id === first, 10_000, from);
    const list = await alice.get<{ items: Array<{ id: string; is_active: boolean }> }>('/api/sessions?source=web');
    expect(list.body.items.filter((s) => s.is_active).map((s) => s.id)).toEqual([first]);
    // a resume replays the reopened conversation
    from = ws.frames.length;
    ws.send({ type: 'resume', session_id: first, last_seq: 0 });
    await ws.waitFor((f) => f.type === 'done' && f.session_id === first, 10_000, from);

    const done = await ask(ws, `second question ${m}`);
    expect(done.session_id).toBe(first);
    expect((await modelSaw(m, 1)).map(text)).toEqual([
      expect.stringContaining(`first question ${m}`),
      `first answer ${m}`,
      expect.stringContaining(`second question ${m}`),
    ]);
    ws.close();
  });

  it('regenerate over WS: the last answer is superseded (kept in the debug tree) and the model never sees it', async () => {
    const alice = await user();
    const { ws, sessionId } = await socket(alice);
    const m = `regen-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [{ content: `A1 ${m}` }, { content: `A2 ${m}` }, { content: `A2 again ${m}` }, { content: `A3 ${m}` }],
    });
    await ask(ws, `Q1 ${m}`);
    await ask(ws, `Q2 ${m}`);
    const from = ws.frames.length;
    const cid = randomUUID();
    ws.send({ type: 'regenerate', client_message_id: cid });
    const ack = await ws.waitFor((f) => f.type === 'ack' && f.client_message_id === cid, 10_000, from);
    expect(ack.duplicate).toBe(false);
    const superseded = await ws.waitFor((f) => f.type === 'messages_superseded', 10_000, from);
    const done = await ws.waitFor((f) => f.type === 'done', 30_000, from);
    expect(done.content).toBe(`A2 again ${m}`);
    expect((await modelSaw(m, 2)).map(text)).toEqual([
      expect.stringContaining(`Q1 ${m}`),
      `A1 ${m}`,
      expect.stringContaining(`Q2 ${m}`),
    ]);
    // the same client id again changes nothing
    ws.send({ type: 'regenerate', client_message_id: cid });
    const again = await ws.waitFor(
      (f) => f.type === 'ack' && f.client_message_id === cid && f.duplicate === true,
      10_000,
    );
    expect(again.message_id).toBe(ack.message_id);

    type Tree = {
      messages: Array<{ kind: string; id: string; content?: string; superseded?: boolean; status?: string }>;
    };
    const tree = (await alice.get<Tree>(`/api/sessions/${sessionId}`)).body.messages;
    // PROTOCOL: the rows AFTER the last user message are superseded; that message stays (one copy)
    expect(tree.map((r) => [r.content, r.superseded ?? false])).toEqual([
      [`Q1 ${m}`, false],
      [`A1 ${m}`, false],
      [`Q2 ${m}`, false],
      [`A2 ${m}`, true],
      [`A2 again ${m}`, false],
    ]);
    expect(superseded.from_message_id).toBe(tree[2].id);
    expect(superseded.keeps_message).toBe(true);
    expect(ack.message_id).toBe(tree[2].id);
    // the user message was not entered again: no echo after the regenerate
    expect(ws.frames.slice(from).filter((f) => f.type === 'user_message')).toEqual([]);
    // the chat history and the export leave the superseded rows out
    const chat = await alice.get<{ items: Array<{ content: string }> }>('/api/web/messages');
    expect(chat.body.items.map((i) => i.content)).toEqual([`Q1 ${m}`, `A1 ${m}`, `Q2 ${m}`, `A2 again ${m}`]);

    // the next turn's model input holds the new answer only
    await ask(ws, `Q3 ${m}`);
    expect((await modelSaw(m, 3)).map(text)).toEqual([
      expect.stringContaining(`Q1 ${m}`),
      `A1 ${m}`,
      expect.stringContaining(`Q2 ${m}`),
      `A2 again ${m}`,
      expect.stringContaining(`Q3 ${m}`),
    ]);
    ws.close();
  });

  it('edit-and-resend over REST: the message and everything after it are superseded; 409 while a turn runs', async () => {
    const alice = await user();
    const { ws, sessionId } = await socket(alice);
    const m = `edit-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: `A1 ${m}` },
        { content: `A2 ${m}` },
        { content: `slow ${m}`, latency: { firstByteMs: 3000 } },
        { content: `edited answer ${m}` },
      ],
    });
    await ask(ws, `Q1 ${m}`);
    await ask(ws, `Q2 ${m}`);
    const q1 = ws.frames.find((f) => f.type === 'user_message' && String(f.content).startsWith('Q1'))!;
    // while a turn runs: conflict, nothing superseded
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: randomUUID(), content: `Q3 ${m}` });
    await ws.waitFor((f) => f.type === 'user_message', 10_000, from);
    const busy = await alice.post(`/api/web/messages/${String(q1.message_id)}/edit`, {
      content: `Q1 edited ${m}`,
      client_message_id: randomUUID(),
    });
    expect(busy.status).toBe(409);
    expect((await alice.post('/api/web/regenerate', { client_message_id: randomUUID() })).status).toBe(409);
    ws.send({ type: 'regenerate', client_message_id: randomUUID() });
    await ws.waitFor((f) => f.type === 'error' && f.code === 'conflict', 10_000, from);
    await ws.waitFor((f) => f.type === 'done', 30_000, from);

    const r = await alice.post<{ message_id: string; duplicate: boolean }>(
      `/api/web/messages/${String(q1.message_id)}/edit`,
      {
        content: `Q1 edited ${m}`,
        client_message_id: randomUUID(),
      },
    );
    expect(r.status).toBe(202);
    await until('the edited answer', async () =>
      (await alice.get<{ items: Array<{ content: string }> }>('/api/web/messages')).body.items.some(
        (i) => i.content === `edited answer ${m}`,
      ),
    );
    expect((await modelSaw(m, 3)).map(text)).toEqual([expect.stringContaining(`Q1 edited ${m}`)]);
    const chat = await alice.get<{ items: Array<{ content: string }> }>('/api/web/messages');
    expect(chat.body.items.map((i) => i.content)).toEqual([`Q1 edited ${m}`, `edited answer ${m}`]);
    const tree = (await alice.get<{ messages: Array<{ superseded?: boolean }> }>(`/api/sessions/${sessionId}`)).body
      .messages;
    expect(tree.filter((x) => x.superseded)).toHaveLength(6);
    // an unknown message, a message id that is not a user message
    const unknown = await alice.post(`/api/web/messages/${randomUUID()}/edit`, {
      content: 'x',
      client_message_id: randomUUID(),
    });
    expect(unknown.status).toBe(404);
    const notUuid = await alice.post(`/api/web/messages/nope/edit`, { content: 'x', client_message_id: randomUUID() });
    expect(notUuid.status).toBe(404);
    const empty = await alice.post(`/api/web/messages/${String(q1.message_id)}/edit`, {
      content: '',
      client_message_id: randomUUID(),
    });
    expect(empty.status).toBe(400);
    ws.close();
  });

  it('delete: the running turn is stopped, the session and every row it owns are gone, the source gets a new session', async () => {
    const alice = await user();
    const { ws, sessionId } = await socket(alice);
    const m = `delete-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: `first ${m}` },
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'echo never' } }] },
        { content: 'never' },
      ],
    });
    await ask(ws, `hello ${m}`);
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: randomUUID(), content: `run it ${m}` });
    await ws.waitFor((f) => f.type === 'approval_required' || f.type === 'pending_write', 30_000, from);
    expect(await rows('chat_history', sessionId)).toBeGreaterThan(0);

    const del = await alice.request('DELETE', `/api/sessions/${sessionId}`);
    expect(del.status).toBe(204);
    const fresh = await ws.waitFor((f) => f.type === 'new_session', 10_000, from);
    expect(fresh.session_id).not.toBe(sessionId);
    for (const table of [
      'chat_history',
      'tool_calls',
      'session_events',
      'session_inbox',
      'stack_frames',
      'session_leases',
    ])
      expect({ table, rows: await rows(table, sessionId) }).toEqual({ table, rows: 0 });
    expect(await db.query<unknown[]>(`SELECT 1 FROM sessions WHERE id = $1`, [sessionId])).toHaveLength(0);
    expect((await alice.get(`/api/sessions/${sessionId}`)).status).toBe(404);
    expect((await alice.request('DELETE', `/api/sessions/${sessionId}`)).status).toBe(404);
    // its approval is no longer waiting in the inbox
    const inbox = await alice.get<{ approvals: Array<{ session_id: string }> }>('/api/inbox');
    expect(inbox.body.approvals.filter((a) => a.session_id === sessionId)).toEqual([]);
    // the source goes on in the new session
    const m2 = `after-${randomUUID()}`;
    await sim.script({ match: m2, replies: [{ content: `fine ${m2}` }] });
    expect((await ask(ws, `still here ${m2}`)).session_id).toBe(fresh.session_id);
    ws.close();
  });

  it('the model chosen in the composer is remembered per conversation, with the effect of /model', async () => {
    const alice = await user();
    const { ws, sessionId: first } = await socket(alice);
    type Clients = { pinned: string | null; items: Array<{ name: string }> };
    type Sessions = { items: Array<{ id: string; client: string | null }> };
    expect((await alice.get<Clients>('/api/llm/clients?source=web')).body.items.map((c) => c.name)).toEqual([
      'primary',
      'backup',
    ]);
    let from = ws.frames.length;
    ws.send({ type: 'select_client', client: 'backup' });
    expect((await ws.waitFor((f) => f.type === 'client_selected', 10_000, from)).client).toBe('backup');
    const m = `model-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'one' }, { content: 'two' }, { content: 'three' }] });
    await ask(ws, `which model ${m}`);
    const used = async (nth: number) =>
      (
        (await sim.requests({ contains: m })).filter((r) => !JSON.stringify(r.body).includes('Write a short title'))[
          nth
        ]?.body as { model: string }
      ).model;
    expect(await used(0)).toBe('sim-backup');
    expect((await alice.get<Sessions>('/api/sessions')).body.items.find((s) => s.id === first)?.client).toBe('backup');

    // a new chat starts with the last choice; AUTO there is remembered there only
    from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: randomUUID(), content: '/new' });
    const second = (await ws.waitFor((f) => f.type === 'new_session', 10_000, from)).session_id as string;
    expect((await alice.get<Clients>('/api/llm/clients?source=web')).body.pinned).toBe('backup');
    from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: randomUUID(), content: '/model auto' });
    await ws.waitFor((f) => f.type === 'command_result', 10_000, from);
    await ask(ws, `auto here ${m}`);
    expect(await used(1)).toBe('sim-primary');
    expect((await alice.get<Sessions>('/api/sessions')).body.items.find((s) => s.id === second)?.client).toBeNull();

    // reopening the first conversation brings its model back
    expect((await alice.post(`/api/sessions/${first}/activate`)).status).toBe(200);
    expect((await alice.get<Clients>('/api/llm/clients?source=web')).body.pinned).toBe('backup');
    await ws.waitFor((f) => f.type === 'new_session' && f.session_id === first, 10_000);
    await ask(ws, `back again ${m}`);
    expect(await used(2)).toBe('sim-backup');
    ws.close();
  });
});
