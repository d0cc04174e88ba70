import { expect } from '@jest/globals';
import { mkdirSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import type { SimCompletionReply } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(240_000);

/** The code units Postgres text cannot keep, and the storage codec's own mark. */
const KINDS: Array<[string, string]> = [
  ['NUL', '\u0000'],
  ['lone high surrogate', '\ud800'],
  ['lone low surrogate', '\udc00'],
  ['codec mark U+FFFF', '\uffff'],
];

interface PoisonCase {
  label: string;
  replies: (m: string) => SimCompletionReply[];
  /** What the user must see once the turn ended (`tag`: the one handed to `replies`). */
  check: (frames: Frame[], tag: string) => void;
}

const toolEnds = (frames: Frame[]): Frame[] =>
  frames.filter((f) => f.type === 'tool_done' || f.type === 'tool_error' || f.type === 'tool_rejected');

/** One case per kind of poison in every field of the model's response. */
function modelCases(): PoisonCase[] {
  const out: PoisonCase[] = [];
  for (const [kind, p] of KINDS) {
    out.push(
      {
        label: `${kind} in the content`,
        replies: (m) => [{ content: `a${p}b ${m}` }],
        check: (fr, m) => expect(fr.find((f) => f.type === 'done')?.content).toBe(`a${p}b ${m}`),
      },
      {
        label: `${kind} in the reasoning`,
        replies: () => [{ content: 'ok', reasoning: `think${p}ing` }],
        check: (fr) => expect(fr.find((f) => f.type === 'done')?.reasoning_content).toBe(`think${p}ing`),
      },
      {
        label: `${kind} in the tool name`,
        replies: () => [{ tool_calls: [{ name: `read${p}file`, arguments: {} }] }, { content: 'ok' }],
        check: (fr) => {
          expect(fr.find((f) => f.type === 'tool_start')?.name).toBe(`read${p}file`);
          expect(toolEnds(fr)).toEqual([
            expect.objectContaining({ type: 'tool_error', error: expect.stringContaining('is not a valid tool name') }),
          ]);
        },
      },
      {
        label: `${kind} in the tool call id`,
        replies: () => [{ tool_calls: [{ id: `call_${p}x`, name: 'list_agents', arguments: {} }] }, { content: 'ok' }],
        check: (fr) => expect(toolEnds(fr).map((f) => f.type)).toEqual(['tool_done']),
      },
      {
        label: `${kind} in a string of the tool arguments`,
        replies: () => [{ tool_calls: [{ name: 'read_file', arguments: { path: `a${p}.txt` } }] }, { content: 'ok' }],
        check: (fr) => {
          expect(fr.find((f) => f.type === 'tool_start')?.arguments).toEqual({ path: `a${p}.txt` });
          expect(toolEnds(fr).map((f) => f.type)).toEqual(['tool_error']);
        },
      },
      {
        label: `${kind} in a command the gate must judge`,
        replies: () => [
          { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo a${p}b` } }] },
          { content: 'ok' },
        ],
        check: (fr) => expect(toolEnds(fr)).toHaveLength(1),
      },
      {
        label: `${kind} in raw (invalid JSON) tool arguments`,
        replies: () => [{ tool_calls: [{ name: 'read_file', arguments: `{"path": "x${p}` }] }, { content: 'ok' }],
        check: (fr) => {
          expect(fr.find((f) => f.type === 'tool_start')?.arguments).toBe(`{"path": "x${p}`);
          expect(toolEnds(fr)).toEqual([
            expect.objectContaining({ type: 'tool_error', error: expect.stringContaining('invalid arguments') }),
          ]);
        },
      },
    );
  }
  out.push({
    label: '10 MB of tool arguments',
    replies: () => [
      {
        tool_calls: [{ name: 'write_file', arguments: { path: 'big.txt', content: 'x'.repeat(10 * 1024 * 1024) } }],
        chunkSize: 1 << 20,
      },
      { content: 'ok' },
    ],
    check: (fr) =>
      expect(toolEnds(fr)).toEqual([
        expect.objectContaining({ type: 'tool_error', error: expect.stringContaining('the limit is') }),
      ]),
  });
  return out;
}

/**
 * Poison never wedges a session, and no loop asks a human without a bound — through the whole
 * stack: NUL bytes, lone surrogates and the codec's mark in every field of the model's response,
 * in a user's message, in a tool's output (invalid UTF-8 too); 10 MB arguments; a step Postgres
 * keeps refusing (the retry budget); symlinks out of the workspace and a file that changes on
 * every read (the re-ask bound). Writes the case count to test-results/attack-suite-poison.json.
 */
describe('poison through the whole stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let poisonCases = 0;
  let wedged = 0;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: { SKALD_SWEEP_INTERVAL_MS: '500', SKALD_LEASE_TTL_MS: '3000', SKALD_HUMAN_POLL_MS: '300' },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
    writeFileSync(
      path.join(ROOT, 'test-results/attack-suite-poison.json'),
      `${JSON.stringify({ poison_cases: poisonCases, wedged })}\n`,
    );
    await db?.query(`DROP TRIGGER IF EXISTS poison_budget ON chat_history`).catch(() => undefined);
    await db?.query(`DROP FUNCTION IF EXISTS poison_budget()`).catch(() => undefined);
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  async function open(): Promise<{ api: ApiClient; ws: WsTestClient; sessionId: string }> {
    const api = await admin.createUser(`p-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    return { api, ws, sessionId };
  }

  /** Sends one message whose turn the sim answers with `replies`; the frames of that turn once it ended. */
  async function turn(
    ws: WsTestClient,
    replies: SimCompletionReply[],
    opts: { content?: string; approve?: boolean } = {},
  ) {
    const m = `m-${randomUUID()}`;
    await sim.script({ match: m, matchIn: 'last_user', replies });
    const from = ws.frames.length;
    const content = opts.content ? `${opts.content} ${m}` : `go ${m}`;
    ws.send({ type: 'message', client_message_id: m, content });
    const answered = new Set<unknown>();
    const approver = opts.approve
      ? setInterval(() => {
          for (const f of ws.frames.slice(from))
            if ((f.type === 'pending_write' || f.type === 'approval_required') && !answered.has(f.request_id)) {
              answered.add(f.request_id);
              ws.send({ type: 'approve_tool', request_id: f.request_id });
            }
        }, 50)
      : null;
    try {
      const end = await ws
        .waitFor((f) => f.type === 'done' || (f.type === 'error' && !f.request_id), 60_000, from)
        .catch(() => null);
      poisonCases++;
      if (!end || end.type !== 'done') {
        wedged++;
        const logs = stack.processes.flatMap((p) => p.logs.filter((l) => /warn|error|"level":(40|50)/i.test(l)));
        throw new Error(
          `turn ${m} did not end with done (${end ? JSON.stringify(end) : 'nothing'}); frames: ${JSON.stringify(ws.frames.slice(from).map((f) => f.type))}; warnings and errors logged:\n${logs.slice(-8).join('\n')}`,
        );
      }
      return { frames: ws.frames.slice(from), m };
    } finally {
      if (approver) clearInterval(approver);
    }
  }

  it('every kind of poison in every field of the model response: the turn goes on to its answer', async () => {
    const { ws, sessionId } = await open();
    for (const c of modelCases()) {
      const tag = `r-${randomUUID()}`;
      // A human approves whatever the gate asks about (a poisoned path is not judged inside the workspace).
      const { frames } = await turn(ws, c.replies(tag), { approve: true });
      try {
        c.check(frames, tag);
      } catch (e) {
        throw new Error(`${c.label}: ${(e as Error).message}`);
      }
    }
    // Stored exactly: the history the UI reads back has the poisoned strings.
    const rows: Array<{ name: string; arguments: string }> = await db.query(
      `SELECT name, arguments FROM tool_calls WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    expect(rows.length).toBeGreaterThan(10);
    const open0 = await db.query<Array<{ turn_state: string }>>(`SELECT turn_state FROM sessions WHERE id = $1`, [
      sessionId,
    ]);
    expect(open0[0].turn_state).toBe('finished');
    ws.close();
  });

  it("a user's message and a tool's output with poison: stored and shown exactly", async () => {
    const { api, ws } = await open();
    for (const [, p] of KINDS) {
      const { frames, m } = await turn(ws, [{ content: 'seen' }], { content: `hello${p}there` });
      expect(frames.find((f) => f.type === 'user_message')?.content).toBe(`hello${p}there ${m}`);
    }
    // A command writing NUL bytes and invalid UTF-8, and a file written with a NUL.
    const cmd = await turn(
      ws,
      [{ tool_calls: [{ name: 'execute_cmd', arguments: { command: "printf 'a\\000b\\377c'" } }] }, { content: 'ran' }],
      { approve: true },
    );
    const done = cmd.frames.find((f) => f.type === 'tool_done');
    expect(done?.result).toContain('a\u0000b\ufffdc');
    const write = await turn(
      ws,
      [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'nul.txt', content: 'x\u0000y' } }] },
        { content: 'wrote' },
      ],
      { approve: true },
    );
    expect(write.frames.find((f) => f.type === 'pending_write')?.new_content).toBe('x\u0000y');
    expect(toolEnds(write.frames).map((f) => f.type)).toEqual(['tool_done']);
    expect(readFileSync(path.join(stack.env.SKALD_WORKSPACES, api.user!.id, 'nul.txt'), 'utf8')).toBe('x\u0000y');
    ws.close();
  });

  it('a step Postgres keeps refusing: 3 attempts, then an error event and a log line with its ids; the sweep stops re-driving it', async () => {
    await db.query(`
      CREATE OR REPLACE FUNCTION poison_budget() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.content LIKE '%REFUSE-THIS-ROW%' THEN
          RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023';
        END IF;
        RETURN NEW;
      END $$`);
    await db.query(
      `CREATE TRIGGER poison_budget BEFORE INSERT ON chat_history FOR EACH ROW EXECUTE FUNCTION poison_budget()`,
    );
    const { ws, sessionId } = await open();
    const m = `b-${randomUUID()}`;
    await sim.script({
      match: m,
      matchIn: 'last_user',
      replies: Array.from({ length: 10 }, () => ({ content: 'REFUSE-THIS-ROW' })),
    });
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    const error = await ws.waitFor((f) => f.type === 'error' && f.code === 'internal', 30_000);
    poisonCases++;
    expect(error.message).toMatch(/could not be saved \(3 attempts in a row failed at the same step\)/);
    expect((await sim.requests({ contains: m })).length).toBe(3);
    // Several sweeps later: nothing re-drove it.
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await sim.requests({ contains: m })).length).toBe(3);
    const s = await db.query<Array<{ turn_state: string; commit_failures: number }>>(
      `SELECT turn_state, commit_failures FROM sessions WHERE id = $1`,
      [sessionId],
    );
    expect(s[0]).toEqual({ turn_state: 'finished', commit_failures: 0 });
    const logged = stack
      .byName('session-worker')
      .flatMap((w) => w.logs)
      .find((l) => l.includes('turn ended: the same step failed too many times') && l.includes(sessionId));
    expect(logged).toBeDefined();
    expect(logged).toContain('"turnId"');
    // The session works on.
    const next = await turn(ws, [{ content: 'fine again' }]);
    expect(next.frames.find((f) => f.type === 'done')?.content).toBe('fine again');
    ws.close();
  });

  it('a session whose agent left the catalog: 3 attempts, then an error naming the agent; the sweep stops re-driving it', async () => {
    const { ws, sessionId } = await open();
    // The conversation's agent was a user's own agent that has since been deleted.
    await db.query(`UPDATE sessions SET agent_id = 'deleted-agent' WHERE id = $1`, [sessionId]);
    const m = `g-${randomUUID()}`;
    ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
    const error = await ws.waitFor((f) => f.type === 'error' && f.code === 'internal', 30_000);
    poisonCases++;
    expect(error.message).toContain('agent deleted-agent is not in the catalog');
    expect(error.message).toContain('3 attempts in a row');
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await sim.requests({ contains: m })).toEqual([]);
    const s = await db.query<Array<{ turn_state: string; commit_failures: number }>>(
      `SELECT turn_state, commit_failures FROM sessions WHERE id = $1`,
      [sessionId],
    );
    expect(s[0]).toEqual({ turn_state: 'finished', commit_failures: 0 });
    const attempts = stack
      .byName('session-worker')
      .flatMap((w) => w.logs)
      .filter((l) => l.includes(sessionId) && l.includes('is not in the catalog') && l.includes('"level":"error"'));
    // Three failed attempts and the line that ended the turn — and no more after it.
    expect(attempts.map((l) => (l.includes('turn ended') ? 'ended' : 'failed'))).toEqual([
      'failed',
      'failed',
      'failed',
      'ended',
    ]);
    ws.close();
  });

  it.each([
    [
      'a dangling symlink out of the workspace',
      (home: string) => symlinkSync('/tmp/skald-nowhere-' + randomUUID(), path.join(home, 'link.txt')),
    ],
    ['a symlink to a file outside', (home: string) => symlinkSync('/etc/hostname', path.join(home, 'link.txt'))],
  ])('%s: the write fails before any card, naming the path', async (_label, setup) => {
    const { api, ws, sessionId } = await open();
    const home = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    mkdirSync(home, { recursive: true });
    setup(home);
    const { frames } = await turn(ws, [
      { tool_calls: [{ name: 'write_file', arguments: { path: 'link.txt', content: 'pwned' } }] },
      { content: 'ok' },
    ]);
    expect(frames.filter((f) => f.type === 'pending_write' || f.type === 'approval_required')).toEqual([]);
    expect(toolEnds(frames)).toEqual([
      expect.objectContaining({
        type: 'tool_error',
        error: '/workspace/link.txt resolves outside the workspace (through a symlink); access refused',
      }),
    ]);
    const asked = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM approval_requests WHERE session_id = $1`,
      [sessionId],
    );
    expect(asked[0].n).toBe(0);
    ws.close();
  });

  it('a file that changes on every read, approved every time: at most one re-ask (two cards), then an error naming the reason', async () => {
    const { api, ws, sessionId } = await open();
    const home = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    mkdirSync(home, { recursive: true });
    const file = path.join(home, 'restless.txt');
    let n = 0;
    writeFileSync(file, 'v0');
    const churn = setInterval(() => writeFileSync(file, `v${++n}`), 10);
    try {
      const { frames } = await turn(
        ws,
        [
          { tool_calls: [{ name: 'write_file', arguments: { path: 'restless.txt', content: 'mine' } }] },
          { content: 'gave up' },
        ],
        { approve: true },
      );
      const cards = frames.filter((f) => f.type === 'pending_write');
      expect(cards).toHaveLength(2);
      expect(new Set(cards.map((c) => c.request_id)).size).toBe(2);
      expect(toolEnds(frames)).toEqual([
        expect.objectContaining({
          type: 'tool_error',
          error: expect.stringMatching(/changed since the preview.*could not be reproduced after 2 approvals/),
        }),
      ]);
      const asked = await db.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM approval_requests WHERE session_id = $1`,
        [sessionId],
      );
      expect(asked[0].n).toBe(2);
      const row = await db.query<Array<{ status: string; stale_reasks: number }>>(
        `SELECT status, stale_reasks FROM tool_calls WHERE session_id = $1`,
        [sessionId],
      );
      expect(row[0]).toEqual({ status: 'failed', stale_reasks: 1 });
    } finally {
      clearInterval(churn);
    }
    ws.close();
  });
});
