import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, StackProcess, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const LEASE_TTL_MS = 1500;
/** Far longer than any bound below: a turn that continues within them was not continued by a sweep. */
const SWEEP_INTERVAL_MS = 120_000;

/**
 * A client resuming a session whose turn lost its worker (kill -9) gets the turn continued at
 * once — as soon as the dead worker's lease has run out — not at the surviving worker's next sweep.
 */
describe('resume continues an interrupted turn without waiting for the sweep', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2 },
      env: { SKALD_LEASE_TTL_MS: String(LEASE_TTL_MS), SKALD_SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS) },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  /** Two live workers, both started (and past their start-up sweep) before the test's kill. */
  async function twoWorkers(): Promise<void> {
    const live = stack.byName('session-worker').filter((w) => w.child.exitCode === null && w.child.signalCode === null);
    for (let i = live.length; i < 2; i++) await stack.addReplica('session-worker');
  }

  async function driverOf(sessionId: string): Promise<StackProcess> {
    return until(
      `the worker driving ${sessionId}`,
      async () =>
        stack
          .byName('session-worker')
          .find(
            (w) =>
              w.child.exitCode === null && w.logs.some((l) => l.includes(sessionId) && l.includes('"turn started"')),
          ),
      10_000,
    );
  }

  /** A turn streaming slowly, its worker killed mid-stream; the client's socket is gone with it. */
  async function interruptedTurn(): Promise<{ api: ApiClient; sessionId: string; m: string }> {
    await twoWorkers();
    const api = await admin.createUser(`r-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    const m = `resume-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: 'slow '.repeat(400), chunkSize: 5, latency: { betweenChunksMs: 100 } },
        { content: `continued ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    await ws.waitForType('token_delta');
    (await driverOf(sessionId)).child.kill('SIGKILL');
    ws.close();
    return { api, sessionId, m };
  }

  async function resume(api: ApiClient, sessionId: string): Promise<WsTestClient> {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    await ws.waitForType('hello');
    ws.send({ type: 'resume', session_id: sessionId, last_seq: 0 });
    return ws;
  }

  it('the lease has run out: the turn continues at the resume', async () => {
    const { api, sessionId, m } = await interruptedTurn();
    await until(
      "the dead worker's lease to run out",
      async () =>
        (
          await db.query<Array<{ expired: boolean }>>(
            `SELECT expires_at <= now() AS expired FROM session_leases WHERE session_id = $1`,
            [sessionId],
          )
        )[0]?.expired === true,
      10_000,
    );
    const resumedAt = Date.now();
    const ws = await resume(api, sessionId);
    const done = await ws.waitFor((f) => f.type === 'done' && f.session_id === sessionId, 15_000);
    expect(done.content).toBe(`continued ${m}`);
    expect(Date.now() - resumedAt).toBeLessThan(5_000);
    ws.close();
  });
});
