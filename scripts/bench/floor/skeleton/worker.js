'use strict';
// The skeleton's session worker: what ARCHITECTURE.md makes a worker do in a tool round, with trivial
// handlers and nothing else (no recovery, sweeps, heartbeats, inbox queueing or mid-turn injection:
// the benchmark's closed loop never sends a message while a turn runs).
//
// - `session.submit` (queue group): one statement takes the session's lease (a new epoch), appends
//   the user's message (idempotent on the client's id) and its `user_message` event (the session's
//   next seq); then the answer, then the echo (`events.<user>.<session>`), then the turn.
// - Each round: a streamed call to llm-sim through the `openai` client (content deltas published as
//   `ephemeral.<user>.<session>` token deltas), then per answer with tool calls one commit (the
//   assistant's message, its calls, `tool_start` per call; fenced by the epoch), `tool_start`
//   announced, then per call `approval.check` → `tools.exec` → one commit (the call done, its
//   `tool_done` event with the result) → `tool_done` announced; an answer without calls is the final
//   commit (the message, `done`, the lease released) and `done`.
// - The lease holder keeps the conversation's history in memory (ARCHITECTURE.md allows it: no one
//   else can write under its epoch); every statement is prepared (named).
//
// SKEL_REQUEST_SIZE: `floor` sends the floor's request (history and one 190-byte tool, no system
// prompt); `skald` adds what makes a Skald model call 13.2 KB at a turn's first round (docs/
// performance.md, "The model request"): a 4.2 KB system prompt, 18 tool schemas of 8.3 KB in all, 0.4 KB of
// environment and style messages — generated, deterministic (a fixed word list and a fixed LCG seed).
const { req, natsConnect, enc, run } = require('./common');
const { Pool } = req('pg');
const { default: OpenAI } = req('openai');

const OWNER = `skeleton-worker-${process.pid}`;
const MAX_ROUNDS = 50;
const READ_FILE = {
  type: 'function',
  function: {
    name: 'read_file',
    description: 'Read a file of the workspace.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

/** Deterministic filler text of `n` characters. */
function filler(n, seed) {
  const words = [
    'the',
    'agent',
    'tool',
    'file',
    'workspace',
    'call',
    'user',
    'path',
    'read',
    'shell',
    'result',
    'model',
  ];
  let x = seed >>> 0;
  let s = '';
  while (s.length < n) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    s += words[x % words.length] + ' ';
  }
  return s.slice(0, n);
}

function skaldSized() {
  const tools = [READ_FILE];
  for (let i = 1; i < 18; i++)
    tools.push({
      type: 'function',
      function: {
        name: `tool_${i}`,
        description: filler(80, i),
        parameters: {
          type: 'object',
          properties: {
            path: { type: 'string', description: filler(60, 100 + i) },
            text: { type: 'string', description: filler(60, 200 + i) },
            limit: { type: 'integer', minimum: 0, maximum: 9007199254740991 },
          },
          required: ['path'],
          additionalProperties: false,
        },
      },
    });
  // pad the schemas to 8.3 KB in all
  const short = 8300 - JSON.stringify(tools).length;
  if (short > 0) tools[17].function.description += filler(short, 999);
  return {
    tools,
    head: [{ role: 'system', content: filler(4200, 7) }],
    tail: [
      { role: 'system', content: filler(250, 8) },
      { role: 'system', content: filler(150, 9) },
    ],
  };
}

const SHAPE = process.env.SKEL_REQUEST_SIZE === 'skald' ? skaldSized() : { tools: [READ_FILE], head: [], tail: [] };

const SQL = {
  submit: `WITH s AS (
      INSERT INTO skel_sessions AS x (id, user_id, lease_owner, lease_epoch, lease_until, last_seq, turn_state)
      VALUES ($1, $2, $3, 1, now() + interval '30 seconds', 1, 'running')
      ON CONFLICT (id) DO UPDATE SET lease_owner = $3, lease_epoch = x.lease_epoch + 1,
        lease_until = now() + interval '30 seconds', last_seq = x.last_seq + 1, turn_state = 'running'
        WHERE x.user_id = $2 AND (x.lease_owner IS NULL OR x.lease_until < now())
      RETURNING lease_epoch, last_seq),
    m AS (INSERT INTO skel_messages (session_id, client_message_id, role, body, epoch)
      SELECT $1, $4, 'user', $5, lease_epoch FROM s ON CONFLICT (session_id, client_message_id) DO NOTHING RETURNING id),
    e AS (INSERT INTO skel_events (session_id, seq, type, body) SELECT $1, s.last_seq, 'user_message', $5 FROM s, m)
    SELECT s.lease_epoch, s.last_seq, (SELECT count(*) FROM m)::int AS entered FROM s`,
  round: `WITH s AS (
      UPDATE skel_sessions SET last_seq = last_seq + $4 WHERE id = $1 AND lease_epoch = $2 AND lease_owner = $3
      RETURNING last_seq),
    m AS (INSERT INTO skel_messages (session_id, role, body, epoch) SELECT $1, 'assistant', $5, $2 FROM s RETURNING id),
    c AS (INSERT INTO skel_tool_calls (message_id, id, ord, session_id, name, args, status)
      SELECT m.id, t.id, t.ord, $1, t.name, t.args, 'pending'
        FROM m, unnest($6::text[], $7::text[], $8::jsonb[]) WITH ORDINALITY AS t(id, name, args, ord)),
    e AS (INSERT INTO skel_events (session_id, seq, type, body)
      SELECT $1, s.last_seq - $4 + t.n, 'tool_start', t.body FROM s, unnest($9::jsonb[]) WITH ORDINALITY AS t(body, n))
    SELECT s.last_seq, m.id AS message_id FROM s, m`,
  done: `WITH s AS (
      UPDATE skel_sessions SET last_seq = last_seq + 1 WHERE id = $1 AND lease_epoch = $2 AND lease_owner = $3
      RETURNING last_seq),
    c AS (UPDATE skel_tool_calls SET status = $6, result = $7 WHERE message_id = $4 AND id = $5 AND EXISTS (SELECT 1 FROM s)),
    e AS (INSERT INTO skel_events (session_id, seq, type, body) SELECT $1, s.last_seq, 'tool_done', $8 FROM s)
    SELECT last_seq FROM s`,
  final: `WITH s AS (
      UPDATE skel_sessions SET last_seq = last_seq + 1, turn_state = 'finished', lease_owner = NULL, lease_until = NULL
      WHERE id = $1 AND lease_epoch = $2 AND lease_owner = $3 RETURNING last_seq),
    m AS (INSERT INTO skel_messages (session_id, role, body, epoch) SELECT $1, 'assistant', $4, $2 FROM s),
    e AS (INSERT INTO skel_events (session_id, seq, type, body) SELECT $1, s.last_seq, 'done', $5 FROM s)
    SELECT last_seq FROM s`,
  history: `SELECT m.body, (SELECT json_agg(json_build_object('id', c.id, 'result', c.result) ORDER BY c.ord)
      FROM skel_tool_calls c WHERE c.message_id = m.id) AS calls
    FROM skel_messages m WHERE m.session_id = $1 ORDER BY m.id`,
};

run(async () => {
  // Connections kept (idleTimeoutMillis 0): pg's default closes them after 10 s idle, and the bench's
  // SQL meter waits 10.5 s before a phase — a new backend and every statement prepared again.
  const pool = new Pool({
    connectionString: process.env.SKEL_DATABASE_URL,
    max: Number(process.env.SKEL_POOL_SIZE ?? 5),
    idleTimeoutMillis: 0,
  });
  await pool.query('SELECT 1');
  const openai = new OpenAI({ baseURL: process.env.SKEL_SIM_URL, apiKey: 'sk-bench', maxRetries: 0 });
  const nc = await natsConnect('worker');
  const sessions = new Map(); // sessionId → { history } (the lease holder's cache)

  const q = (name, values) => pool.query({ name, text: SQL[name], values });
  /** One fenced commit: its row, or an error when the lease was lost (nothing written). */
  const commit = async (name, values) => {
    const { rows } = await q(name, values);
    if (rows.length === 0) throw new Error('lease lost');
    return rows[0];
  };
  const frame = (type, sessionId, seq, rest) => JSON.stringify({ type, session_id: sessionId, seq, ...rest });

  async function callModel(s) {
    const stream = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [...SHAPE.head, ...s.history, ...SHAPE.tail],
      tools: SHAPE.tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    const calls = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        content += delta.content;
        nc.publish(s.ephemeral, enc({ type: 'token_delta', session_id: s.id, text: delta.content }));
      }
      for (const tc of delta.tool_calls ?? []) {
        const c = (calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.function.name += tc.function.name;
        if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
      }
    }
    return calls.length > 0 ? { role: 'assistant', content, tool_calls: calls } : { role: 'assistant', content };
  }

  async function runCall(s, messageId, call) {
    let args;
    try {
      args = JSON.parse(call.function.arguments || '{}');
    } catch {
      args = null;
    }
    const base = { actor: s.actor, session_id: s.id, call_id: call.id, tool: call.function.name, args };
    let status = 'done';
    let result;
    const check =
      args === null
        ? { decision: 'deny' }
        : (await nc.request('approval.check', enc(base), { timeout: 10_000 })).json();
    if (check.decision !== 'allow') {
      // The benchmark's calls are all allowed; a human's answer is out of the skeleton's scope.
      status = 'rejected';
      result = `Error: the call was not allowed (${check.decision}).`;
    } else {
      const r = (await nc.request('tools.exec', enc(base), { timeout: 60_000 })).json();
      status = r.ok ? 'done' : 'failed';
      result = r.ok ? r.output : `Error: ${r.error}`;
    }
    const body = { call_id: call.id, name: call.function.name, status, result };
    const { last_seq } = await commit('done', [s.id, s.epoch, OWNER, messageId, call.id, status, result, body]);
    nc.publish(s.events, Buffer.from(frame('tool_done', s.id, last_seq, body)));
    s.history.push({ role: 'tool', tool_call_id: call.id, content: result });
  }

  /** The conversation's history from the table (user and model rows, each call's result after its row). */
  async function reload(s) {
    const { rows } = await q('history', [s.id]);
    s.history = [];
    for (const r of rows) {
      s.history.push(r.body);
      for (const c of r.calls ?? []) s.history.push({ role: 'tool', tool_call_id: c.id, content: c.result ?? '' });
    }
    // the message just entered is the last row: runTurn's caller pushes it
    if (s.history.at(-1)?.role === 'user') s.history.pop();
  }

  async function runTurn(s) {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const a = await callModel(s);
      s.history.push(a);
      if (!a.tool_calls) {
        const body = { text: a.content };
        const { last_seq } = await commit('final', [s.id, s.epoch, OWNER, a, body]);
        nc.publish(s.events, Buffer.from(frame('done', s.id, last_seq, body)));
        return;
      }
      const starts = a.tool_calls.map((c) => ({
        call_id: c.id,
        name: c.function.name,
        arguments: c.function.arguments,
      }));
      const { last_seq, message_id } = await commit('round', [
        s.id,
        s.epoch,
        OWNER,
        starts.length,
        a,
        a.tool_calls.map((c) => c.id),
        a.tool_calls.map((c) => c.function.name),
        a.tool_calls.map((c) => c.function.arguments || '{}'),
        starts,
      ]);
      starts.forEach((b, i) =>
        nc.publish(s.events, Buffer.from(frame('tool_start', s.id, last_seq - starts.length + 1 + i, b))),
      );
      for (const c of a.tool_calls) await runCall(s, message_id, c);
    }
    throw new Error('the model did not stop calling tools');
  }

  nc.subscribe('session.submit', {
    queue: 'session-worker',
    callback: (err, msg) => {
      if (err) return;
      const m = msg.json();
      const userMsg = { role: 'user', content: m.content };
      const body = { content: m.content, client_message_id: m.client_message_id };
      q('submit', [m.session_id, m.actor.userId, OWNER, m.client_message_id, userMsg]).then(
        ({ rows }) => {
          if (rows.length === 0 || rows[0].entered === 0) {
            // lease held elsewhere, or a duplicate: stored (or already there), no turn started here
            msg.respond(enc({ ok: true, entered: false }));
            return;
          }
          const { lease_epoch: epoch, last_seq: seq } = rows[0];
          msg.respond(enc({ ok: true, entered: true, seq }));
          let s = sessions.get(m.session_id);
          // The cached history is this worker's only if it held the previous epoch; else read it.
          const fresh = seq === 1;
          if (s && s.epoch !== epoch - 1) s = null;
          if (!s) {
            s = {
              id: m.session_id,
              actor: m.actor,
              history: [],
              events: `events.${m.actor.userId}.${m.session_id}`,
              ephemeral: `ephemeral.${m.actor.userId}.${m.session_id}`,
            };
            sessions.set(m.session_id, s);
          }
          s.epoch = epoch;
          nc.publish(s.events, Buffer.from(frame('user_message', s.id, seq, body)));
          (fresh || s.history.length > 0 ? Promise.resolve() : reload(s))
            .then(() => {
              s.history.push(userMsg);
              return runTurn(s);
            })
            .catch((e) => {
              sessions.delete(s.id);
              nc.publish(
                s.events,
                Buffer.from(frame('error', s.id, undefined, { code: 'turn_failed', message: e.message })),
              );
            });
        },
        (e) => msg.respond(enc({ ok: false, error: e.message })),
      );
    },
  });
  await nc.flush();
  return async () => {
    await nc.drain();
    await pool.end();
  };
});
