'use strict';
// The skeleton's approval service: answers `approval.check` (queue group) from rules it holds in
// memory (allow `read_file`, require everything else: the default seed's two cases the benchmark can
// meet), and records each automatic decision in its audit table in batches every 200 ms, as Skald's
// approval service does (AuditService: a check never waits for a write; a crash loses at most that
// window of automatic entries). ARCHITECTURE.md does not make an automatic allow a state transition,
// so the audit is the product's, not the topology's; it is kept because it is cheap (one INSERT per
// 200 ms) and Skald pays it.
const { createHash } = require('node:crypto');
const { req, natsConnect, enc, run } = require('./common');
const { Pool } = req('pg');

const ALLOW = new Set(['read_file']);

run(async () => {
  // idleTimeoutMillis 0: the connections are kept (pg's default closes them after 10 s idle, and the
  // bench's SQL meter waits 10.5 s before a phase: a new backend and every statement prepared again)
  const pool = new Pool({ connectionString: process.env.SKEL_DATABASE_URL, max: 2, idleTimeoutMillis: 0 });
  await pool.query('SELECT 1');
  const nc = await natsConnect('approval');
  let buffer = [];
  const flush = async () => {
    if (buffer.length === 0) return;
    const b = buffer;
    buffer = [];
    await pool.query({
      name: 'skel_audit',
      text: `INSERT INTO skel_audit (at, user_id, session_id, call_id, tool, decision, args_digest)
             SELECT * FROM unnest($1::timestamptz[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[])`,
      values: ['at', 'user', 'session', 'call', 'tool', 'decision', 'digest'].map((k) => b.map((x) => x[k])),
    });
  };
  const timer = setInterval(() => void flush().catch(() => undefined), 200);
  nc.subscribe('approval.check', {
    queue: 'approval-service',
    callback: (err, msg) => {
      if (err) return;
      const q = msg.json();
      const decision = ALLOW.has(q.tool) ? 'allow' : 'require';
      buffer.push({
        at: new Date(),
        user: q.actor.userId,
        session: q.session_id,
        call: q.call_id,
        tool: q.tool,
        decision,
        digest: `sha256:${createHash('sha256').update(JSON.stringify(q.args)).digest('hex').slice(0, 16)}`,
      });
      msg.respond(enc({ decision }));
    },
  });
  await nc.flush();
  return async () => {
    clearInterval(timer);
    await flush().catch(() => undefined);
    await nc.drain();
    await pool.end();
  };
});
