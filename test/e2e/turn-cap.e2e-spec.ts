import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, StackProcess, WsTestClient } from '@skald/testing';
import { recordAttackSuite } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(240_000);

const LEASE_TTL_MS = 3000;
const CAP = 2;
const SOURCES = ['s0', 's1', 's2', 's3', 's4'];

/**
 * The per-user cap on running turns through the real stack (two workers, llm-sim with a slow
 * model): a user's five messages to five sessions at once run at most CAP at any sampled moment,
 * all five are answered once; another user is not held back; a worker killed mid-way still lets
 * every waiting session start (recovery, doorbells, the sweep).
 */
describe('per-user cap on concurrent turns, end to end', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2 },
      env: {
        SKALD_LEASE_TTL_MS: String(LEASE_TTL_MS),
        SKALD_SWEEP_INTERVAL_MS: '1000',
        SKALD_MAX_CONCURRENT_TURNS_PER_USER: String(CAP),
      },
      perApp: { 'tool-runner': { SKALD_SANDBOX: 'none' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  /** Samples how many turns of each user run, every 40 ms, until stopped: the maximum per user. */
  function sampler(userIds: string[]) {
    const max = new Map(userIds.map((u) => [u, 0]));
    let samples = 0;
    let on = true;
    const done = (async () => {
      while (on) {
        const rows = await db
          .query<Array<{ user_id: string; n: number }>>(
            `SELECT user_id, count(*)::int AS n FROM sessions
            WHERE user_id = ANY($1::uuid[]) AND turn_state = 'running' GROUP BY user_id`,
            [userIds],
          )
          .catch(() => {
            on = false;
            return [];
          });
        samples++;
        for (const r of rows) max.set(r.user_id, Math.max(max.get(r.user_id) ?? 0, r.n));
        await new Promise((r) => setTimeout(r, 40));
      }
    })();
    return {
      max,
      stop: async () => {
        on = false;
        await done;
        return samples;
      },
    };
  }

  async function user(name: string, sources: string[]) {
    const u = await admin.createUser(`${name}-${randomUUID()}@skald.test`, 'correct horse battery');
    const sockets = [];
    for (const source of sources) {
      const ws = await WsTestClient.connect(stack.gatewayUrl, { token: u.token, source });
      await ws.waitForType('hello');
      sockets.push(ws);
    }
    return { id: u.user!.id, token: u.token, sockets };
  }

  async function sendAll(sockets: WsTestClient[], tag: string, firstByteMs: number): Promise<string[]> {
    const markers = sockets.map((_, i) => `${tag}-${i}-${randomUUID()}`);
    for (const m of markers)
      await sim.script({
        match: m,
        replies: [
          // Twice: a turn recovered after a kill asks again.
          { content: `answer ${m}`, latency: { firstByteMs } },
          { content: `answer ${m}`, latency: { firstByteMs } },
        ],
      });
    sockets.forEach((ws, i) =>
      ws.send({ type: 'message', client_message_id: `c-${markers[i]}`, content: `go ${markers[i]}` }),
    );
    return markers;
  }

  async function answeredOnce(ws: WsTestClient, marker: string, timeoutMs: number): Promise<void> {
    const done = await ws.waitFor((f) => f.type === 'done' && f.content === `answer ${marker}`, timeoutMs);
    expect(done).toBeDefined();
    const isAck = (f: { type: string; client_message_id?: unknown }) =>
      f.type === 'ack' && f.client_message_id === `c-${marker}`;
    if (!ws.frames.some(isAck)) {
      // The worker that took the submit was killed before it answered (the gateway answered an
      // error): the client sends the same message again, as a client does without an ack.
      ws.send({ type: 'message', client_message_id: `c-${marker}`, content: `go ${marker}` });
      const again = await ws.waitFor(isAck, 20_000);
      expect(again.duplicate).toBe(true);
    } else expect(ws.frames.find(isAck)?.duplicate).toBe(false);
    const rows: Array<{ role: string; n: number }> = await db.query(
      `SELECT role, count(*)::int AS n FROM chat_history
        WHERE (role = 'user' AND content = $1) OR (role = 'assistant' AND content = $2) GROUP BY role ORDER BY role`,
      [`go ${marker}`, `answer ${marker}`],
    );
    expect(rows).toEqual([
      { role: 'assistant', n: 1 },
      { role: 'user', n: 1 },
    ]);
  }

  it(`five messages to five sessions at once: at most ${CAP} turns run, all five answered once; another user is not held back`, async () => {
    const alice = await user('alice', SOURCES);
    const bob = await user('bob', ['s0', 's1']);
    const s = sampler([alice.id, bob.id]);
    const started = Date.now();
    const aliceMarkers = await sendAll(alice.sockets, 'a', 1500);
    const bobMarkers = await sendAll(bob.sockets, 'b', 1500);
    await Promise.all(bob.sockets.map((ws, i) => answeredOnce(ws, bobMarkers[i], 30_000)));
    const bobDone = Date.now() - started;
    await Promise.all(alice.sockets.map((ws, i) => answeredOnce(ws, aliceMarkers[i], 60_000)));
    const aliceDone = Date.now() - started;
    const samples = await s.stop();
    recordAttackSuite('fairness', 'concurrent turns e2e', {
      cap: CAP,
      messages: 5,
      maxRunning: s.max.get(alice.id) ?? 0,
      samples,
    });
    console.log(
      `turn cap e2e: samples=${samples} alice max running=${s.max.get(alice.id)} (cap ${CAP}) all 5 answered in ${aliceDone} ms; bob max=${s.max.get(bob.id)} answered in ${bobDone} ms`,
    );
    expect(s.max.get(alice.id)).toBe(CAP);
    expect(s.max.get(bob.id)).toBe(2);
    for (const ws of [...alice.sockets, ...bob.sockets]) ws.close();
  });

  it(`past the cap the waiting session is told why (turn_waiting naming the cap, once per worker), a reconnect reads turn_running waiting turn_slot; under the cap nothing is told`, async () => {
    const dave = await user('dave', ['s0', 's1', 's2']);
    const [s0, s1, s2] = dave.sockets;
    // Two turns that run a while (the cap is 2), then a third message, to another session.
    const markers = ['w0', 'w1', 'w2'].map((t) => `${t}-${randomUUID()}`);
    for (const m of markers)
      await sim.script({ match: m, replies: [{ content: `answer ${m}`, latency: { firstByteMs: 5000 } }] });
    for (const [i, ws] of [s0, s1].entries()) {
      ws.send({ type: 'message', client_message_id: `c-${markers[i]}`, content: `go ${markers[i]}` });
      await ws.waitFor((f) => f.type === 'user_message' && f.client_message_id === `c-${markers[i]}`, 20_000);
    }
    s2.send({ type: 'message', client_message_id: `c-${markers[2]}`, content: `go ${markers[2]}` });
    const ack = await s2.waitFor((f) => f.type === 'ack' && f.client_message_id === `c-${markers[2]}`, 20_000);
    expect(ack.duplicate).toBe(false);
    const told = await s2.waitFor((f) => f.type === 'turn_waiting', 10_000);
    expect(told).toMatchObject({
      session_id: s2.frames.find((f) => f.type === 'hello')?.session_id,
      client_message_id: `c-${markers[2]}`,
      reason: 'concurrent_turns',
      limit: CAP,
    });
    expect(told.message).toContain(`${CAP} turns running at once`);
    expect(told.message).toContain('SKALD_MAX_CONCURRENT_TURNS_PER_USER');
    // A socket that connects now reads it from the table.
    const late = await WsTestClient.connect(stack.gatewayUrl, { token: dave.token, source: 's2' });
    const running = await late.waitForType('turn_running');
    expect(running).toMatchObject({ running: false, waiting: 'turn_slot', limit: CAP });
    // While it waits, sweeps and doorbells drive the session again (1 s sweeps on two workers): the
    // notice is not repeated on each pass — at most once per worker.
    await s2.waitFor((f) => f.type === 'user_message' && f.client_message_id === `c-${markers[2]}`, 30_000);
    const notices = s2.frames.filter((f) => f.type === 'turn_waiting');
    expect(notices.length).toBeGreaterThanOrEqual(1);
    expect(notices.length).toBeLessThanOrEqual(2);
    // Under the cap nothing was told.
    for (const ws of [s0, s1]) expect(ws.frames.filter((f) => f.type === 'turn_waiting')).toEqual([]);
    await s2.waitFor((f) => f.type === 'done' && f.content === `answer ${markers[2]}`, 30_000);
    // Started: a reconnect no longer says it waits.
    const after = await WsTestClient.connect(stack.gatewayUrl, { token: dave.token, source: 's2' });
    const now = await after.waitForType('turn_running');
    expect(now.waiting).toBeUndefined();
    console.log(`turn cap e2e (told): ${notices.length} turn_waiting while held back`);
    for (const ws of [...dave.sockets, late, after]) ws.close();
  });

  it('a worker killed mid-way: every waiting session still starts, each message answered once, never more than the cap running', async () => {
    const alice = await user('carol', SOURCES);
    const s = sampler([alice.id]);
    const markers = await sendAll(alice.sockets, 'k', 2500);
    // Wait until turns run, then kill a worker that drives one of them.
    let victim: StackProcess | undefined;
    for (let i = 0; i < 200 && !victim; i++) {
      const running: Array<{ id: string }> = await db.query(
        `SELECT id FROM sessions WHERE user_id = $1 AND turn_state = 'running'`,
        [alice.id],
      );
      victim = stack
        .byName('session-worker')
        .find(
          (w) =>
            w.child.exitCode === null &&
            running.some((r) => w.logs.some((l) => l.includes(r.id) && l.includes('"turn started"'))),
        );
      if (!victim) await new Promise((r) => setTimeout(r, 50));
    }
    expect(victim).toBeDefined();
    victim!.child.kill('SIGKILL');
    await Promise.all(alice.sockets.map((ws, i) => answeredOnce(ws, markers[i], LEASE_TTL_MS + 90_000)));
    const samples = await s.stop();
    console.log(`turn cap e2e (worker killed): samples=${samples} max running=${s.max.get(alice.id)} (cap ${CAP})`);
    expect(s.max.get(alice.id)).toBeLessThanOrEqual(CAP);
    const counter: Array<{ running: number }> = await db.query(
      `SELECT running FROM user_turns_running WHERE user_id = $1`,
      [alice.id],
    );
    expect(counter[0]?.running ?? 0).toBe(0);
    for (const ws of alice.sockets) ws.close();
  });
});
