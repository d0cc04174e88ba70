import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, StackProcess, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

const LEASE_TTL_MS = 3000;

/**
 * Faults of the session worker: kill -9 mid-stream and mid-command, SIGSTOP past the lease,
 * SIGTERM. Every test leaves two live workers behind for the next one.
 */
describe('session worker faults', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const SOURCE = 'faults';

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2 },
      env: {
        SKALD_LEASE_TTL_MS: String(LEASE_TTL_MS),
        SKALD_SWEEP_INTERVAL_MS: '1000',
        SKALD_SHUTDOWN_GRACE_MS: '8000',
      },
      perApp: { 'tool-runner': { SKALD_SANDBOX: 'none' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    // Commands from this test's source run without a human (the default seed asks for them).
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_cmd', $2, 'allow', 1, 'faults test', 'test rule')`,
      [randomUUID(), SOURCE],
    );
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_task', $2, 'allow', 1, 'faults test', 'test rule')`,
      [randomUUID(), SOURCE],
    );
  });
  // A failed test must not leave the next one with fewer than two workers.
  beforeEach(async () => {
    await ensureTwoWorkers();
  });

  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = 'faults test'`);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  async function open(): Promise<{ api: ApiClient; ws: WsTestClient; sessionId: string }> {
    const api = await admin.createUser(`f-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    return { api, ws, sessionId };
  }

  async function driverOf(sessionId: string): Promise<StackProcess> {
    for (let i = 0; i < 100; i++) {
      const p = stack
        .byName('session-worker')
        .find(
          (w) => w.child.exitCode === null && w.logs.some((l) => l.includes(sessionId) && l.includes('"turn started"')),
        );
      if (p) return p;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no worker drives ${sessionId}`);
  }

  async function ensureTwoWorkers(): Promise<void> {
    if (!stack) return;
    const live = stack.byName('session-worker').filter((w) => w.child.exitCode === null && w.child.signalCode === null);
    for (let i = live.length; i < 2; i++) await stack.addReplica('session-worker');
  }

  it('kill -9 during the LLM stream: another replica recovers the turn after the lease expires; nothing is lost or doubled', async () => {
    const { ws, sessionId } = await open();
    const m = `k9-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: 'slow '.repeat(200), chunkSize: 5, latency: { betweenChunksMs: 100 } },
        { content: 'recovered answer' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    await ws.waitForType('token_delta');
    const driver = await driverOf(sessionId);
    driver.child.kill('SIGKILL');
    const killedAt = Date.now();
    const done = await ws.waitFor((f) => f.type === 'done', LEASE_TTL_MS + 15_000);
    expect(done.content).toBe('recovered answer');
    expect(Date.now() - killedAt).toBeLessThan(LEASE_TTL_MS + 15_000);
    const rows: Array<{ role: string; n: number }> = await db.query(
      `SELECT role, count(*)::int AS n FROM chat_history WHERE session_id = $1 GROUP BY role ORDER BY role`,
      [sessionId],
    );
    expect(rows).toEqual([
      { role: 'assistant', n: 1 },
      { role: 'user', n: 1 },
    ]);
    const events = ws.frames.filter((f) => typeof f.seq === 'number');
    expect(events.filter((e) => e.type === 'user_message')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
    await ensureTwoWorkers();
    ws.close();
  });

  it('a burst of messages to one session through both workers (and retries): every message entered once, no queued input left', async () => {
    const { api, ws, sessionId } = await open();
    const ws2 = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    expect((await ws2.waitForType('hello')).session_id).toBe(sessionId);
    const ids = Array.from({ length: 8 }, (_, i) => `burst-${i}-${randomUUID()}`);
    // Each submit lands on either worker (queue group); whichever statement finds the lease free
    // takes it, every other one only stores its message (a retry: nothing at all).
    for (const [i, id] of ids.entries())
      (i % 2 === 0 ? ws : ws2).send({
        type: 'message',
        client_message_id: id,
        content: `burst ${i}`,
        delivery: 'queue',
      });
    ws2.send({ type: 'message', client_message_id: ids[0], content: 'burst 0', delivery: 'queue' });
    ws.send({ type: 'message', client_message_id: ids[1], content: 'burst 1', delivery: 'queue' });
    const settled = async (): Promise<boolean> => {
      const [r] = await db.query<Array<{ users: number; queued: number; state: string }>>(
        `SELECT (SELECT count(*)::int FROM chat_history WHERE session_id = $1 AND role = 'user') AS users,
                (SELECT count(*)::int FROM session_inbox WHERE session_id = $1 AND status = 'queued') AS queued,
                (SELECT turn_state FROM sessions WHERE id = $1) AS state`,
        [sessionId],
      );
      return r.users === ids.length && r.queued === 0 && r.state === 'finished';
    };
    for (let i = 0; i < 300 && !(await settled()); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await settled()).toBe(true);
    const entered: Array<{ client_message_id: string; n: number }> = await db.query(
      `SELECT client_message_id, count(*)::int AS n FROM chat_history WHERE session_id = $1 AND role = 'user'
        GROUP BY client_message_id ORDER BY client_message_id`,
      [sessionId],
    );
    expect(entered).toEqual([...ids].sort().map((id) => ({ client_message_id: id, n: 1 })));
    const inbox: Array<{ n: number }> = await db.query(
      `SELECT count(*)::int AS n FROM session_inbox WHERE session_id = $1`,
      [sessionId],
    );
    expect(inbox).toEqual([{ n: ids.length }]);
    ws.close();
    ws2.close();
  });

  /**
   * A worker carries a session's history from one of its turns to the next (HistoryCarry) only when
   * no one else held the lease between. Turns of one conversation land on either worker (each
   * submit goes to one of the queue group): when worker A drives a turn after B drove the one
   * before, A must not answer from what it kept — every model request carries the whole
   * conversation so far, in order.
   */
  it('turns of one conversation through both workers: every model request carries the whole conversation', async () => {
    const { ws, sessionId } = await open();
    const turns = 12;
    const marks = Array.from({ length: turns }, (_, i) => `carry-${i}-${randomUUID()}`);
    for (const [i, m] of marks.entries()) {
      await sim.script({ match: m, matchIn: 'last_user', replies: [{ content: `answer ${i}` }] });
      ws.send({ type: 'message', client_message_id: m, content: `turn ${i} ${m}` });
      await ws.waitFor((f) => f.type === 'done' && f.content === `answer ${i}`, 20_000);
    }
    for (const [i, m] of marks.entries()) {
      type Wire = { role: string; content?: unknown };
      const text = (x: Wire) => (typeof x.content === 'string' ? x.content : JSON.stringify(x.content));
      // The turn's own model request: its last user message is the turn's.
      const reqs = (await sim.requests({ contains: m })).map((r) => r.body as { messages: Wire[] });
      const req = reqs.find(
        (r) =>
          r.messages
            .filter((x) => x.role === 'user')
            .map(text)
            .at(-1) === `turn ${i} ${m}`,
      );
      const said = req!.messages
        .filter((x) => x.role === 'user' || x.role === 'assistant')
        .map(text)
        .filter((c) => /^turn \d+ carry-|^answer \d+$/.test(c));
      const whole = marks.slice(0, i + 1).flatMap((mk, j) => [`turn ${j} ${mk}`, ...(j < i ? [`answer ${j}`] : [])]);
      expect(said).toEqual(whole);
    }
    // Which worker drove each turn (for the record: the check above matters when they alternate).
    const starts = stack
      .byName('session-worker')
      .flatMap((w, k) =>
        w.logs
          .filter((l) => l.includes(sessionId) && l.includes('"turn started"'))
          .map((l) => ({ k, at: String((JSON.parse(l) as { time: string }).time) })),
      )
      .sort((a, b) => (a.at < b.at ? -1 : 1));
    console.log(`carry: turns driven by workers ${starts.map((x) => x.k).join('')}`);
    ws.close();
  });

  it('kill -9 during execute_cmd: the call ends interrupted, is never re-run, and the command ran once', async () => {
    const { api, ws, sessionId } = await open();
    const m = `cmd-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        {
          tool_calls: [
            { name: 'execute_cmd', arguments: { command: 'echo ran | tee -a marker.txt; sleep 4', timeout: 30 } },
          ],
        },
        { content: 'checked the state' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `run it ${m}` });
    await ws.waitForType('tool_start');
    // `tee` writes a file: the gate's read-only catalogue asks a human even under an allow rule.
    const card = await ws.waitForType('pending_write');
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    const driver = await driverOf(sessionId);
    await new Promise((r) => setTimeout(r, 1500));
    driver.child.kill('SIGKILL');
    const done = await ws.waitFor((f) => f.type === 'done', LEASE_TTL_MS + 20_000);
    expect(done.content).toBe('checked the state');
    const calls: Array<{ status: string; name: string }> = await db.query(
      `SELECT status, name FROM tool_calls WHERE session_id = $1`,
      [sessionId],
    );
    expect(calls).toEqual([{ status: 'interrupted', name: 'execute_cmd' }]);
    // The model was told the command may or may not have run.
    const second = (await sim.requests({ contains: m }))[1].body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(JSON.stringify(second.messages.find((x) => x.role === 'tool')?.content)).toContain(
      'interrupted by a restart after it started',
    );
    // Let the command finish on the tool runner, then count its side effect.
    await new Promise((r) => setTimeout(r, 5000));
    const marker = readFileSync(path.join(stack.env.SKALD_WORKSPACES, api.user!.id, 'marker.txt'), 'utf8');
    expect(marker).toBe('ran\n');
    await ensureTwoWorkers();
    ws.close();
  });

  it('/stop kills a running command: tool_cancelled, the process is gone, the turn ends interrupted', async () => {
    const { ws, sessionId } = await open();
    const m = `kill-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `sleep 31 && echo ${m}`, timeout: 60 } }] },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `sleep ${m}` });
    await ws.waitForType('tool_start');
    await new Promise((r) => setTimeout(r, 1000));
    const running = (): boolean => {
      try {
        return execFileSync('pgrep', ['-f', 'sleep 31'], { encoding: 'utf8' }).trim().length > 0;
      } catch {
        return false;
      }
    };
    expect(running()).toBe(true);
    ws.send({ type: 'cancel' });
    await ws.waitForType('tool_cancelled');
    const err = await ws.waitFor((f) => f.type === 'error' && f.code === 'interrupted');
    expect(err.session_id).toBe(sessionId);
    for (let i = 0; i < 50 && running(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(running()).toBe(false);
    const calls: Array<{ status: string }> = await db.query(`SELECT status FROM tool_calls WHERE session_id = $1`, [
      sessionId,
    ]);
    expect(calls).toEqual([{ status: 'cancelled' }]);
    ws.close();
  });

  it('kill -9 inside a sub-agent: the child is recovered as its own agent, its answer reaches the parent, each frame closes once', async () => {
    const { ws, sessionId } = await open();
    const root = `root-${randomUUID()}`;
    const child = `child-${randomUUID()}`;
    await sim.script({
      match: root,
      matchIn: 'last_user',
      replies: [
        {
          tool_calls: [
            { name: 'execute_task', arguments: { agent_id: 'generalist', prompt: `count the files ${child}` } },
          ],
        },
        { content: 'the child said three' },
      ],
    });
    await sim.script({
      match: child,
      matchIn: 'last_user',
      replies: [
        { content: 'slow '.repeat(200), chunkSize: 5, latency: { betweenChunksMs: 100 } },
        { content: 'three' },
      ],
    });
    ws.send({ type: 'message', client_message_id: root, content: `delegate ${root}` });
    await ws.waitForType('agent_start');
    await ws.waitForType('token_delta');
    (await driverOf(sessionId)).child.kill('SIGKILL');
    const done = await ws.waitFor((f) => f.type === 'done', LEASE_TTL_MS + 20_000);
    expect(done.content).toBe('the child said three');
    const frames: Array<{ depth: number; agent_id: string; status: string }> = await db.query(
      `SELECT depth, agent_id, status FROM stack_frames WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    expect(frames).toEqual([
      { depth: 0, agent_id: 'main', status: 'active' },
      { depth: 1, agent_id: 'generalist', status: 'closed' },
    ]);
    const calls: Array<{ name: string; status: string; result: string }> = await db.query(
      `SELECT name, status, result FROM tool_calls WHERE session_id = $1`,
      [sessionId],
    );
    expect(calls).toEqual([{ name: 'execute_task', status: 'done', result: 'three' }]);
    // The child was asked twice (killed, then recovered), both times as itself (the generalist's prompt).
    const childRequests = (await sim.requests({ contains: child })).filter((r) =>
      JSON.stringify((r.body as { messages: unknown[] }).messages[0]).includes('You are a generalist task agent'),
    );
    expect(childRequests).toHaveLength(2);
    ws.close();
  });

  it('kill -9 during a parallel sub-agent batch: the batch is reaped (calls failed, frames closed) and the parent answers', async () => {
    const { ws, sessionId } = await open();
    const root = `proot-${randomUUID()}`;
    const a = `pa-${randomUUID()}`;
    const b = `pb-${randomUUID()}`;
    await sim.script({
      match: root,
      matchIn: 'last_user',
      replies: [
        {
          tool_calls: [
            { name: 'execute_task', arguments: { agent_id: 'generalist', prompt: `first ${a}` } },
            { name: 'execute_task', arguments: { agent_id: 'generalist', prompt: `second ${b}` } },
          ],
        },
        { content: 'both were lost, sorry' },
      ],
    });
    for (const k of [a, b]) {
      await sim.script({
        match: k,
        matchIn: 'last_user',
        replies: [{ content: 'slow '.repeat(200), chunkSize: 5, latency: { betweenChunksMs: 100 } }],
      });
    }
    ws.send({ type: 'message', client_message_id: root, content: `fan out ${root}` });
    await ws.waitFor((f) => f.type === 'agent_start' && ws.frames.filter((x) => x.type === 'agent_start').length >= 2);
    await ws.waitForType('token_delta');
    (await driverOf(sessionId)).child.kill('SIGKILL');
    const done = await ws.waitFor((f) => f.type === 'done', LEASE_TTL_MS + 20_000);
    expect(done.content).toBe('both were lost, sorry');
    const frames: Array<{ depth: number; status: string }> = await db.query(
      `SELECT depth, status FROM stack_frames WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    expect(frames).toEqual([
      { depth: 0, status: 'active' },
      { depth: 1, status: 'closed' },
      { depth: 1, status: 'closed' },
    ]);
    const calls: Array<{ name: string; status: string }> = await db.query(
      `SELECT name, status FROM tool_calls WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    expect(calls).toEqual([
      { name: 'execute_task', status: 'failed' },
      { name: 'execute_task', status: 'failed' },
    ]);
    ws.close();
  });

  it('SIGSTOP past the lease: another replica takes over; after SIGCONT the stale worker writes nothing and stops driving', async () => {
    const { ws, sessionId } = await open();
    const m = `stop-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: 'stale answer', latency: { firstByteMs: 2500 } },
        { content: 'fresh answer', latency: { firstByteMs: 200 } },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    await ws.waitForType('user_message');
    const driver = await driverOf(sessionId);
    // Stop it only once its LLM request is out (it takes the first, slow reply).
    await sim.waitForRequest((r) => JSON.stringify(r.body).includes(m), { timeoutMs: 10_000 });
    driver.child.kill('SIGSTOP');
    let done;
    try {
      done = await ws.waitFor((f) => f.type === 'done', LEASE_TTL_MS + 20_000);
    } finally {
      driver.child.kill('SIGCONT');
    }
    expect(done.content).toBe('fresh answer');
    // The stale worker's stream completes now; its commit must be fenced.
    await new Promise((r) => setTimeout(r, 4000));
    expect(driver.logs.some((l) => l.includes(sessionId) && l.includes('lease lost'))).toBe(true);
    const rows: Array<{ role: string; content: string; epoch: string }> = await db.query(
      `SELECT role, content, epoch FROM chat_history WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    expect(rows.map((r) => [r.role, r.content])).toEqual([
      ['user', `go ${m}`],
      ['assistant', 'fresh answer'],
    ]);
    expect(Number(rows[1].epoch)).toBeGreaterThan(Number(rows[0].epoch));
    expect(ws.frames.filter((f) => f.type === 'done')).toHaveLength(1);
    ws.close();
  });

  it('SIGTERM: the worker finishes its turn within the grace period, releases its lease and exits 0', async () => {
    const { ws, sessionId } = await open();
    const m = `term-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'finished before leaving', latency: { firstByteMs: 2000 } }] });
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    await ws.waitForType('user_message');
    const driver = await driverOf(sessionId);
    const exited = new Promise<number | null>((resolve) => driver.child.once('exit', (code) => resolve(code)));
    driver.child.kill('SIGTERM');
    const done = await ws.waitFor((f) => f.type === 'done', 20_000);
    expect(done.content).toBe('finished before leaving');
    expect(await exited).toBe(0);
    const lease: Array<{ owner: string | null }> = await db.query(
      `SELECT owner FROM session_leases WHERE session_id = $1`,
      [sessionId],
    );
    expect(lease[0].owner).toBeNull();
    // A new message is driven by the remaining replica.
    const n = `after-${randomUUID()}`;
    await sim.script({ match: n, replies: [{ content: 'still here' }] });
    ws.send({ type: 'message', client_message_id: n, content: `again ${n}` });
    await ws
      .waitFor((f) => f.type === 'done' && f.content === 'still here', 20_000)
      .catch((e: Error) => {
        throw new Error(`${e.message}\n${JSON.stringify(ws.frames.filter((f) => f.type === 'error'))}`);
      });
    await ensureTwoWorkers();
    ws.close();
  });
});
