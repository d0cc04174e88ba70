import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, PrivateNats, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(240_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long the model takes to answer each turn of the sweep. */
const ANSWER_MS = 1_000;
/** How long the NATS server stays down. */
const DOWN_MS = 300;
/**
 * The offsets from the turn's last event (`done`) at which NATS is killed, every 25 ms. Wider before
 * the event than after: a kill up to DOWN_MS plus a reconnect before it is where an event is lost,
 * and the calibrated lag is only as good as the machine's load lets it be (each row also reports
 * the kill's distance from the stored event).
 */
const OFFSETS = Array.from({ length: 27 }, (_, i) => -350 + i * 25);
const SOCKETS = 5;
/** What the client may wait for the turn's end once NATS is back. */
const WITHIN_MS = 2_000;

/** A socket that notes when each `done` arrives (by seq). */
class Watched {
  readonly doneAt = new Map<number, number>();
  constructor(readonly ws: WsTestClient) {
    ws.ws.on('message', (data: Buffer) => {
      const f = JSON.parse(data.toString('utf8')) as { type: string; seq?: number };
      if (f.type === 'done' && typeof f.seq === 'number') this.doneAt.set(f.seq, Date.now());
    });
  }
  seqs(): number[] {
    return this.ws.frames.filter((f) => typeof f.seq === 'number').map((f) => f.seq as number);
  }
}

/**
 * Every open socket gets every event of the session it follows: across a gap in the gateway's NATS
 * connection (core NATS drops what is published meanwhile, and a turn's last event has no later
 * one to reveal the gap), and after a `resume` the server refused. NATS is a private server on a
 * spare port, so killing it disturbs no other test.
 */
describe('a socket gets every event of its session', () => {
  let nats: PrivateNats;
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    nats = await PrivateNats.start({ serviceUsers: true });
    stack = await Stack.start({ root: ROOT, nats });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db?.isInitialized) await assertInvariantsAndClose(db);
    await stack?.stop();
    await nats?.destroy();
  });

  /** Sends a message, again while no worker answers (NATS just came back): the id makes it once. */
  async function say(ws: WsTestClient, m: string, content: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const from = ws.frames.length;
      ws.send({ type: 'message', client_message_id: m, content });
      const f = await ws.waitFor(
        (x) => (x.type === 'ack' && x.client_message_id === m) || (x.type === 'error' && x.code === 'unavailable'),
        20_000,
        from,
      );
      if (f.type === 'ack') return;
      if (attempt >= 40) throw new Error('no session worker answered the message');
      await sleep(250);
    }
  }

  it('a socket that sent a refused resume still gets the next turn of its own session', async () => {
    const alice = await admin.createUser(`refused-a-${randomUUID()}@skald.test`, 'correct horse battery');
    const bob = await admin.createUser(`refused-b-${randomUUID()}@skald.test`, 'correct horse battery');
    const wsBob = await WsTestClient.connect(stack.gatewayUrl, { token: bob.token });
    const bobSession = (await wsBob.waitForType('hello')).session_id as string;
    wsBob.close();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: alice.token });
    const own = (await ws.waitForType('hello')).session_id as string;
    await ws.waitForType('turn_running');
    for (const foreign of [bobSession, randomUUID()]) {
      const from = ws.frames.length;
      ws.send({ type: 'resume', session_id: foreign, last_seq: 0 });
      expect(await ws.waitFor((f) => f.type === 'error', 10_000, from)).toMatchObject({ code: 'not_found' });
    }
    const m = `refused-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'still yours' }] });
    const from = ws.frames.length;
    await say(ws, m, `go ${m}`);
    await ws.waitFor((f) => f.type === 'user_message' && f.client_message_id === m, 10_000, from);
    const done = await ws.waitFor((f) => f.type === 'done', 10_000, from);
    expect(done).toMatchObject({ session_id: own, content: 'still yours' });
    ws.close();
  });

  it("NATS killed at every 25 ms offset around a turn's last event: every open socket gets `done` within 2 s of NATS being back", async () => {
    const user = await admin.createUser(`gap-${randomUUID()}@skald.test`, 'correct horse battery');
    const sockets: Watched[] = [];
    for (let i = 0; i < SOCKETS; i++) {
      const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token });
      await ws.waitForType('turn_running');
      sockets.push(new Watched(ws));
    }
    const sessionId = sockets[0].ws.frames.find((f) => f.type === 'hello')?.session_id as string;
    const [first] = sockets;

    /** One turn: the echo's arrival, its seq, and the `done`'s seq once it is stored. */
    async function turn(tag: string) {
      const m = `${tag}-${randomUUID()}`;
      await sim.script({ match: m, replies: [{ content: `answer ${tag}`, latency: { firstByteMs: ANSWER_MS } }] });
      const from = first.ws.frames.length;
      await say(first.ws, m, `go ${m}`);
      const echo = await first.ws.waitFor((f) => f.type === 'user_message' && f.client_message_id === m, 20_000, from);
      return { echoAt: Date.now(), echoSeq: echo.seq as number };
    }
    async function storedDone(afterSeq: number): Promise<{ seq: number; at: number }> {
      for (let i = 0; i < 200; i++) {
        const rows: Array<{ seq: string; at: Date }> = await db.query(
          `SELECT seq, created_at AS at FROM session_events WHERE session_id = $1 AND type = 'done' AND seq > $2`,
          [sessionId, afterSeq],
        );
        if (rows.length > 0) return { seq: Number(rows[0].seq), at: rows[0].at.getTime() };
        await sleep(100);
      }
      throw new Error('the turn did not end');
    }

    // Calibration: how long after its echo a turn's `done` reaches the sockets, NATS untouched.
    const lags: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = await turn(`calibrate${i}`);
      const done = await storedDone(t.echoSeq);
      await first.ws.waitFor((f) => f.type === 'done' && f.seq === done.seq, 20_000);
      lags.push(first.doneAt.get(done.seq)! - t.echoAt);
    }
    const lag = lags.sort((a, b) => a - b)[1];

    const rows: Array<{ offset: number; measured: number; got: number; late: number[] }> = [];
    for (const offset of OFFSETS) {
      const t = await turn(`gap${offset}`);
      await sleep(Math.max(0, t.echoAt + lag + offset - Date.now()));
      const killedAt = Date.now();
      await nats.kill();
      await sleep(DOWN_MS);
      await nats.start();
      const backAt = Date.now();
      const done = await storedDone(t.echoSeq);
      while (Date.now() < backAt + WITHIN_MS && sockets.some((s) => !s.doneAt.has(done.seq))) await sleep(20);
      const arrivals = sockets.map((s) => s.doneAt.get(done.seq));
      rows.push({
        offset,
        measured: killedAt - done.at,
        got: arrivals.filter((a) => a !== undefined && a <= backAt + WITHIN_MS).length,
        late: arrivals.map((a) => (a === undefined ? -1 : a - backAt)),
      });
    }
    const total = rows.reduce((n, r) => n + r.got, 0);
    console.log(
      [
        `bus gap sweep: echo→done ${lag} ms (calibration ${lags.join(', ')}); NATS down ${DOWN_MS} ms`,
        'offset(nominal) offset(kill − done row created_at) sockets-with-done-within-2s ms-after-back(-1: none)',
        ...rows.map((r) => `${r.offset} ${r.measured} ${r.got}/${SOCKETS} ${r.late.join(',')}`),
        `total ${total}/${rows.length * SOCKETS}`,
      ].join('\n'),
    );
    expect(rows.filter((r) => r.got < SOCKETS)).toEqual([]);

    // Nothing twice and nothing skipped: every socket saw each event of the session once, in order.
    const head = Number(
      (
        await db.query<Array<{ n: string }>>(`SELECT max(seq) AS n FROM session_events WHERE session_id = $1`, [
          sessionId,
        ])
      )[0].n,
    );
    for (const s of sockets) expect(s.seqs()).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    for (const s of sockets) s.ws.close();
  });
});
