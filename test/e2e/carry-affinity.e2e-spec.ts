import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, StackProcess, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

/**
 * Carry affinity with two session-worker processes: a conversation's turns stay on the worker that
 * took its lease (the gateway sends its next submit to that worker's own subject), which starts
 * them from the history it kept (`skald_turn_history_total{from="carried"}`), not from a whole
 * read; and when that worker is killed (-9) between turns the next message goes to the other one
 * and completes there, entered once.
 */
describe('carry affinity (two session workers)', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const SOURCE = 'affinity';

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT, replicas: { 'session-worker': 2 } });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db) await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  const live = (): StackProcess[] =>
    stack.byName('session-worker').filter((w) => w.child.exitCode === null && w.child.signalCode === null);

  /** A worker's turns started from input so far, by where their history came from. */
  async function historyStarts(w: StackProcess): Promise<{ carried: number; read: number }> {
    const text = await (await fetch(`${w.url}/metrics`)).text();
    const count = (from: string): number =>
      Number(new RegExp(`^skald_turn_history_total\\{from="${from}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { carried: count('carried'), read: count('read') };
  }

  /** The workers whose log says they started a turn of the session. */
  const driversOf = (sessionId: string): string[] =>
    stack
      .byName('session-worker')
      .filter((w) => w.logs.some((l) => l.includes(sessionId) && l.includes('"turn started"')))
      .map((w) => w.instance);

  async function turn(ws: WsTestClient, sessionId: string, n: number): Promise<void> {
    const m = `aff-${n}-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `answer ${n}` }] });
    const before = ws.frames.length;
    ws.send({ type: 'message', client_message_id: m, content: `turn ${m}` });
    const done = await ws.waitFor((f) => f.type === 'done', 30_000, before);
    expect(done.content).toBe(`answer ${n}`);
    // The next message comes after the worker let the lease go, as a person's does: one sent within
    // a few ms of `done` can still race the release (docs/performance.md, "What is left").
    for (let i = 0; i < 100; i++) {
      const [l] = await db.query<Array<{ owner: string | null }>>(
        `SELECT owner FROM session_leases WHERE session_id = $1`,
        [sessionId],
      );
      if (!l?.owner) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the lease was not released after the turn');
  }

  it("a conversation's turns run on one worker, from its memory; after that worker is killed the next completes on the other", async () => {
    const api = await admin.createUser(`aff-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    await turn(ws, sessionId, 1);
    const [owner] = driversOf(sessionId);
    const ownerProc = stack.byName('session-worker').find((w) => w.instance === owner)!;
    const startsBefore = await historyStarts(ownerProc);
    // Without the hint, each turn lands on either worker (queue group): 1 in 32 for all five here.
    for (let n = 2; n <= 6; n++) await turn(ws, sessionId, n);
    expect(driversOf(sessionId)).toEqual([owner]);
    const startsAfter = await historyStarts(ownerProc);
    expect(startsAfter.carried - startsBefore.carried).toBe(5);
    expect(startsAfter.read).toBe(startsBefore.read);

    ownerProc.child.kill('SIGKILL');
    await new Promise<void>((r) => {
      if (ownerProc.child.exitCode !== null || ownerProc.child.signalCode !== null) r();
      else ownerProc.child.once('exit', () => r());
    });
    const [other] = live();
    const otherBefore = await historyStarts(other);
    await turn(ws, sessionId, 7);
    await turn(ws, sessionId, 8);
    expect(driversOf(sessionId).sort()).toEqual([owner, other.instance].sort());
    // the move cost one whole read; the turn after it is carried again
    const otherAfter = await historyStarts(other);
    expect(otherAfter.read - otherBefore.read).toBe(1);
    expect(otherAfter.carried - otherBefore.carried).toBe(1);
    const rows: Array<{ role: string; n: number }> = await db.query(
      `SELECT role, count(*)::int AS n FROM chat_history WHERE session_id = $1 GROUP BY role ORDER BY role`,
      [sessionId],
    );
    expect(rows).toEqual([
      { role: 'assistant', n: 8 },
      { role: 'user', n: 8 },
    ]);
    const events = ws.frames.filter((f) => typeof f.seq === 'number');
    expect(events.filter((e) => e.type === 'user_message')).toHaveLength(8);
    expect(events.filter((e) => e.type === 'done')).toHaveLength(8);
    ws.close();
  });
});
