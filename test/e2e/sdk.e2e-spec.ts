import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DataSource } from 'typeorm';
import fc from 'fast-check';
import WebSocket from 'ws';
import { SkaldClient, type TurnEvent, type WebSocketConstructor } from '@skald/client';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

/** The `ws` package as the SDK's WebSocket, each socket kept so the spec can cut it like a network would. */
const sockets: WebSocket[] = [];
class TrackedWebSocket extends WebSocket {
  constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
    super(url, protocols, options);
    sockets.push(this);
  }
}
const NodeWebSocket = TrackedWebSocket as unknown as WebSocketConstructor;

/** The SDK in Node against the five apps and llm-sim: REST, the socket, approvals, stop, uploads, reconnects. */
describe('@skald/client against a live stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db?.isInitialized) await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  async function user(): Promise<{ client: SkaldClient; id: string }> {
    const email = `sdk-${randomUUID()}@skald.test`;
    const u = await admin.createUser(email, 'correct horse battery');
    const { client } = await SkaldClient.login({
      baseUrl: stack.gatewayUrl,
      email,
      password: 'correct horse battery',
      WebSocket: NodeWebSocket,
    });
    return { client, id: u.user!.id };
  }

  /** The session's stored events after `after`, as (seq, type), in seq order. */
  async function stored(sessionId: string, after: number, upTo: number): Promise<Array<[number, string]>> {
    const rows = await db.query<Array<{ seq: string; type: string }>>(
      'SELECT seq, type FROM session_events WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq',
      [sessionId, after, upTo],
    );
    return rows.map((r) => [Number(r.seq), r.type]);
  }

  const sequenced = (events: TurnEvent[]): Array<[number, string]> =>
    events.flatMap((e) => ('seq' in e ? [[e.seq, e.type] as [number, string]] : []));

  it('a turn with an approval, read as an async iterator over a header-authenticated socket', async () => {
    const { client, id } = await user();
    const conn = client.connect({ source: 'cli', auth: 'header' });
    await conn.ready();
    const m = `sdk-approve-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: 'ship it\n' } }] },
        { content: 'written' },
      ],
    });
    const turn = conn.message(`write the plan ${m}`);
    const events: TurnEvent[] = [];
    for await (const e of turn) {
      events.push(e);
      if (e.type === 'pending_write') {
        expect(e).toMatchObject({ kind: 'file', path: '/workspace/plan.md', new_content: 'ship it\n' });
        expect(conn.approve(e.request_id)).toBe(true);
      }
    }
    const end = await turn.end;
    expect(end).toMatchObject({ kind: 'done', frame: { content: 'written' } });
    expect((await turn.acked).client_message_id).toBe(turn.clientMessageId);
    const types = events.filter((e) => 'seq' in e).map((e) => e.type);
    expect(types).toEqual(['user_message', 'tool_start', 'pending_write', 'tool_done', 'file_changed', 'done']);
    expect(readFileSync(path.join(stack.env.SKALD_WORKSPACES, id, 'plan.md'), 'utf8')).toBe('ship it\n');
    // what the iterator yielded is what the session stored, seq by seq
    const seen = sequenced(events);
    expect(seen).toEqual(await stored(conn.sessionId!, seen[0][0] - 1, seen.at(-1)![0]));
    conn.stop();
  });

  it('the socket cut three times in the middle of a turn: every event of the turn seen exactly once, in order', async () => {
    const { client } = await user();
    const conn = client.connect({ source: 'cli', reconnect: { baseMs: 50, maxMs: 200 } });
    await conn.ready();
    const m = `sdk-cut-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        {
          content: 'one',
          tool_calls: [{ name: 'list_files', arguments: { path: '.' } }],
          latency: { firstByteMs: 300 },
        },
        {
          content: 'two',
          tool_calls: [{ name: 'list_files', arguments: { path: '.' } }],
          latency: { firstByteMs: 300 },
        },
        {
          content: 'three',
          tool_calls: [{ name: 'list_files', arguments: { path: '.' } }],
          latency: { firstByteMs: 300 },
        },
        { content: 'the end', latency: { firstByteMs: 300, betweenChunksMs: 20 } },
      ],
    });
    const turn = conn.message(`go ${m}`);
    const events: TurnEvent[] = [];
    const states: string[] = [];
    conn.onState((s) => states.push(s));
    let cuts = 0;
    for await (const e of turn) {
      events.push(e);
      // cut the live socket (no close handshake, as a network drop) after each tool_start
      if (e.type === 'tool_start' && cuts < 3) {
        cuts++;
        sockets.at(-1)!.terminate();
      }
    }
    expect(cuts).toBe(3);
    expect(states.filter((s) => s === 'open').length).toBeGreaterThanOrEqual(3);
    expect(await turn.end).toMatchObject({ kind: 'done', frame: { content: 'the end' } });
    const seen = sequenced(events);
    const seqs = seen.map(([s]) => s);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seqs[0] + i));
    expect(seen).toEqual(await stored(conn.sessionId!, seqs[0] - 1, seqs.at(-1)!));
    expect(seen.filter(([, t]) => t === 'tool_done')).toHaveLength(3);
    conn.stop();
  });

  it('ticket auth, an upload sent as an attachment, a queued message and a stop', async () => {
    const { client } = await user();
    const conn = client.connect({ source: 'mobile' });
    await conn.ready();
    expect(sockets.at(-1)!.url).toContain('ticket=');
    const file = await client.upload('mobile', new Blob(['hello file']), 'note.txt');
    expect(file).toMatchObject({ path: '/workspace/uploads/note.txt', name: 'note.txt', filesize: 10 });

    const m = `sdk-stop-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'too slow', latency: { firstByteMs: 30_000 } }] });
    const q = `sdk-queued-${randomUUID()}`;
    await sim.script({ match: q, replies: [{ content: 'queued answer' }] });
    const first = conn.message(`read it ${m}`, { attachments: [file] });
    const echo = await (async () => {
      for await (const e of first) if (e.type === 'user_message') return e;
      throw new Error('no echo');
    })();
    expect(echo.attachments).toEqual([file]);
    const queued = conn.message(`then this ${q}`, { delivery: 'queue' });
    await queued.acked;
    expect(conn.cancel()).toBe(true);
    expect(await first.end).toMatchObject({ kind: 'error', frame: { code: 'interrupted' } });
    // the stop keeps the queued message from entering the conversation
    expect(await queued.end).toMatchObject({ kind: 'discarded', frame: { client_message_id: queued.clientMessageId } });
    conn.stop();
  });

  it('typed REST operations by operationId: create, rename, read, page through, export, tokens; a foreign id is 404', async () => {
    const { client } = await user();
    const other = await user();
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push((await client.call('createSession', { query: { source: 'cli' } })).session_id);
    const renamed = await client.call('renameSession', { params: { id: made[0] }, body: { title: 'typed title' } });
    expect(renamed).toEqual({ id: made[0], title: 'typed title' });
    const detail = await client.call('getSession', { params: { id: made[0] } });
    expect(detail.session).toMatchObject({ id: made[0], source: 'cli', title: 'typed title' });
    // one per page: every conversation once, the pages bounded
    const listed: string[] = [];
    for await (const s of client.items('listSessions', { query: { source: 'cli', per_page: 1 } }, { maxPages: 10 }))
      listed.push(s.id);
    expect([...listed].sort()).toEqual([...made].sort());
    const exported = await client.call('exportSession', { params: { id: made[0] }, query: { format: 'json' } });
    expect(exported).toMatchObject({ session: { id: made[0] } });
    expect(await client.call('getInbox')).toEqual({ approvals: [], clarifications: [] });
    const token = await client.call('createToken', { body: { name: 'sdk' } });
    expect((await client.call('listTokens')).items.map((t) => t.id)).toContain(token.id);
    expect(await client.call('revokeToken', { params: { id: token.id } })).toBeUndefined();
    // another user's conversation is not found, whatever the operation
    await expect(other.client.call('getSession', { params: { id: made[0] } })).rejects.toMatchObject({ status: 404 });
    await expect(
      other.client.call('renameSession', { params: { id: made[0] }, body: { title: 'mine now' } }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('refused messages, regenerates and edits (too long, nothing to regenerate, unknown or foreign message): each turn ends with its error', async () => {
    const { client } = await user();
    const stranger = await user();
    // a message of another user: editing it from here is not found
    const theirs = stranger.client.connect({ source: 'cli', auth: 'header' });
    await theirs.ready();
    const m = `sdk-theirs-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'theirs' }] });
    const theirTurn = theirs.message(`hello ${m}`);
    const foreignMessage = (await theirTurn.acked).message_id;
    await theirTurn.end;
    theirs.stop();

    const conn = client.connect({ source: 'cli', auth: 'header' });
    await conn.ready();
    type Kind = 'too_long' | 'regenerate_nothing' | 'edit_unknown' | 'edit_foreign';
    const send = (k: Kind) => {
      switch (k) {
        case 'too_long':
          return { turn: conn.message('x'.repeat(600 * 1024)), code: 'invalid_input' };
        case 'regenerate_nothing':
          return { turn: conn.regenerate(), code: 'not_found' };
        case 'edit_unknown':
          return { turn: conn.edit(randomUUID(), 'new text'), code: 'not_found' };
        case 'edit_foreign':
          return { turn: conn.edit(foreignMessage, 'stolen'), code: 'not_found' };
      }
    };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Kind>('too_long', 'regenerate_nothing', 'edit_unknown', 'edit_foreign'), {
          minLength: 1,
          maxLength: 4,
        }),
        async (kinds) => {
          const sent = kinds.map(send);
          for (const { turn, code } of sent) {
            const end = await turn.end;
            expect(end).toMatchObject({ kind: 'refused', frame: { code, client_message_id: turn.clientMessageId } });
          }
        },
      ),
      { seed: 37, numRuns: 8 },
    );
    // the connection goes on: a message is answered
    const ok = `sdk-after-refusals-${randomUUID()}`;
    await sim.script({ match: ok, replies: [{ content: 'still here' }] });
    expect(await conn.message(`and now ${ok}`).end).toMatchObject({ kind: 'done', frame: { content: 'still here' } });
    conn.stop();
  });

  it('a refused credential ends the connection with a clear reason instead of retrying', async () => {
    const client = new SkaldClient({ baseUrl: stack.gatewayUrl, token: 'not-a-token', WebSocket: NodeWebSocket });
    const conn = client.connect({ source: 'cli' });
    await expect(conn.ready()).rejects.toMatchObject({ reason: 'unauthorized' });
    await expect(client.sessions()).rejects.toMatchObject({ status: 401 });
  });
});
