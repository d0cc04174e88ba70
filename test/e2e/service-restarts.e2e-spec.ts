import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, stopProcess, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(240_000);

const SOURCE = 'service-restarts';
/**
 * The session worker's bound on retrying a request nobody answers (`SKALD_NO_RESPONDER_RETRY_MS`): twice
 * the default, because a restart on a loaded test machine (six processes on two shared cores) took 13-14 s.
 */
const RETRY_BOUND_MS = 30_000;
const ROUNDS = 60;
/** The model's think time before each tool call: the stream makes about three calls a second. */
const THINK_MS = 250;

/** The first file named `name` under `dir`, depth first (a user's workspace is a few levels down). */
function findFile(dir: string, name: string): string | null {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isFile() && e.name === name) return p;
    if (e.isDirectory()) {
      const found = findFile(p, name);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Restarts of the tool runner (kill -9) and of the approval service (SIGTERM) under a steady
 * stream of tool calls: a call that finds nobody to answer it (nothing was delivered) waits, with
 * backoff, for the restarted service within the session worker's bound, so no call fails; and the
 * runner's durable record (keyed by tool call id) keeps a retried call from running twice: the
 * appended file holds every line exactly once.
 */
describe('service restarts under a stream of tool calls', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: {
        SKALD_MAX_TOOL_ROUNDS: String(ROUNDS + 10),
        SKALD_SHUTDOWN_GRACE_MS: '5000',
        SKALD_NO_RESPONDER_RETRY_MS: String(RETRY_BOUND_MS),
      },
      perApp: { 'tool-runner': { SKALD_SANDBOX: 'none' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'append_file', $2, 'allow', 1, 'service restarts test', 'test rule')`,
      [randomUUID(), SOURCE],
    );
  });

  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = 'service restarts test'`);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  it('kill -9 of the tool runner and SIGTERM of the approval service, each restarted within the bound: 0 calls fail, none runs twice', async () => {
    const user = await admin.createUser(`sr-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: SOURCE });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    const m = `sr-${randomUUID()}`;
    const file = `stream-${m}.txt`;
    await sim.script({
      match: m,
      replies: [
        ...Array.from({ length: ROUNDS }, (_, i) => ({
          tool_calls: [{ name: 'append_file', arguments: { path: file, content: `${i}\n` } }],
          latency: { firstByteMs: THINK_MS },
        })),
        { content: 'stream finished' },
      ],
    });
    const toolDone = (): number => ws.frames.filter((f) => f.type === 'tool_done').length;
    const afterCalls = (n: number) => ws.waitFor(() => toolDone() >= n, 60_000);
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });

    // Right after a call ended the runner is idle for the model's think time: the kill finds no
    // call running (a call killed mid-run may have taken effect and is rightly "interrupted").
    await afterCalls(5);
    const runner = stack.byName('tool-runner')[0];
    const killedAt = Date.now();
    await stopProcess(runner.child, 'SIGKILL', 1_000);
    await new Promise((r) => setTimeout(r, 1_000));
    await stack.addReplica('tool-runner', { SKALD_SANDBOX: 'none' });
    const runnerGap = Date.now() - killedAt;
    expect(runnerGap).toBeLessThan(RETRY_BOUND_MS);

    const reached = toolDone();
    await afterCalls(reached + 5);
    const approvals = stack.byName('approval-service')[0];
    const stoppedAt = Date.now();
    await stopProcess(approvals.child, 'SIGTERM', 10_000);
    await stack.addReplica('approval-service');
    const approvalGap = Date.now() - stoppedAt;
    expect(approvalGap).toBeLessThan(RETRY_BOUND_MS);
    // The stream was still running when both services were back: both restarts were under load.
    expect(toolDone()).toBeLessThan(ROUNDS);

    const done = await ws.waitFor((f) => f.type === 'done', 90_000);
    expect(done.content).toBe('stream finished');
    const calls: Array<{ status: string; error: string | null }> = await db.query(
      `SELECT status, error FROM tool_calls WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    const failed = calls.filter((c) => c.status !== 'done');
    console.log(
      `runner down ${runnerGap} ms, approval service down ${approvalGap} ms, ${failed.length} of ${calls.length} calls failed`,
    );
    expect({ runnerGap, approvalGap, calls: calls.length, failed }).toEqual({
      runnerGap,
      approvalGap,
      calls: ROUNDS,
      failed: [],
    });
    // Each call ran exactly once: the file holds every line once, in order.
    const written = findFile(stack.env.SKALD_WORKSPACES, file);
    expect(written).not.toBeNull();
    expect(readFileSync(written as string, 'utf8')).toBe(Array.from({ length: ROUNDS }, (_, i) => `${i}\n`).join(''));
    ws.close();
  });
});
