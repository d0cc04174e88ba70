import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ensureDatabase, migrateUp } from '@skald/persistence';
import {
  ApiClient,
  LlmSimAdminClient,
  PrivateNats,
  PrivatePostgres,
  PrivateRedis,
  Stack,
  StackProcess,
} from '@skald/testing';
import { invariantViolations } from '../support/invariants';
import { ChaosConversation } from './conversation';
import {
  APP_FAULTS,
  AppFault,
  CHAOS_APPS,
  ChaosApp,
  chaosPlan,
  FAULT_KINDS,
  FaultKind,
  FaultStep,
  isAppFault,
  MessageKind,
  messageKind,
} from './plan';

export interface ChaosOptions {
  root: string;
  seed: number;
  /** How long conversations run and faults are injected. */
  durationMs: number;
  conversations: number;
  /** Progress lines (faults as they happen); default: none. */
  say?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  durationMs: number;
  conversations: number;
  /** Messages sent, and of those acknowledged (accepted). */
  sent: number;
  accepted: number;
  byKind: Record<MessageKind, number>;
  faults: Record<FaultKind, number>;
  /** Of the `kill` and `stop` faults, how many hit each app. */
  appFaults: Record<AppFault, Record<ChaosApp, number>>;
  /** Milliseconds from each fault's healing until a fresh turn was answered end to end, per kind. */
  recoveryMs: Record<FaultKind, number[]>;
  /** Approve frames sent (answers to approval cards, and resends of those not seen resolved). */
  approvals: number;
  cronRuns: number;
  /** Every broken invariant, named; empty when the run passed. */
  violations: string[];
  counts: {
    lost: number;
    dup: number;
    noOutcome: number;
    effectTwice: number;
    effectMissing: number;
    replayGaps: number;
    replayMismatch: number;
    dupDelivery: number;
    stuck: number;
    cronTwice: number;
  };
}

const LEASE_TTL_MS = 3000;
/** How long one message may take to reach its outcome while faults go on, before it counts as stuck. */
const MESSAGE_MS = 120_000;
/** After the last fault: how long every session gets to settle before the checks. */
const SETTLE_MS = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const live = (p: StackProcess) => p.child.exitCode === null && p.child.signalCode === null;

/**
 * A chaos run against private Postgres, NATS and Redis instances (spare ports, never the machine's
 * shared servers): `conversations` users talk to the stack (plain answers, side-effecting commands,
 * file appends that need an approval, sub-agent delegations) and a cron job fires, while seeded
 * faults hit every app (kill -9, SIGSTOP), NATS, Redis and Postgres (restarts, backends
 * terminated). Then the invariants are checked from outside (WebSocket, REST, Postgres reads, the
 * workspace files).
 */
export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const say = opts.say ?? (() => undefined);
  const plan = chaosPlan(opts.seed);
  const pg = await PrivatePostgres.start();
  const nats = await PrivateNats.start({ serviceUsers: true });
  const redis = await PrivateRedis.start();
  const url = pg.url('skald_chaos');
  await ensureDatabase(url);
  await migrateUp(url);
  let stack: Stack | undefined;
  let db: DataSource | undefined;
  const conversations: ChaosConversation[] = [];
  try {
    stack = await startStack(say, {
      root: opts.root,
      replicas: { 'session-worker': 2, gateway: 2 },
      nats,
      readyTimeoutMs: 120_000,
      env: {
        DATABASE_URL: url,
        REDIS_URL: redis.url,
        LOG_LEVEL: 'warn',
        SKALD_LEASE_TTL_MS: String(LEASE_TTL_MS),
        SKALD_SWEEP_INTERVAL_MS: '1000',
      },
      perApp: {
        'tool-runner': { SKALD_SANDBOX: 'none' },
        // The cron job fires every 5 s; stale runs are taken over within seconds.
        scheduler: {
          SKALD_CRON_MIN_INTERVAL_S: '1',
          SKALD_JOB_POLL_MS: '300',
          SKALD_JOB_STALE_MS: '3000',
          SKALD_JOB_RECONCILE_MS: '2000',
        },
      },
    });
    db = new DataSource({ type: 'postgres', url, extra: { max: 3 } });
    await db.initialize();
    return await drive(opts, plan, { pg, nats, redis, stack, db, conversations, say });
  } finally {
    for (const c of conversations) c.close();
    await db?.destroy().catch(() => undefined);
    await stack?.stop().catch((e: unknown) => say(`stack stop: ${String(e)}`));
    await nats.destroy();
    await redis.destroy();
    await pg.destroy();
  }
}

interface World {
  pg: PrivatePostgres;
  nats: PrivateNats;
  redis: PrivateRedis;
  stack: Stack;
  db: DataSource;
  conversations: ChaosConversation[];
  say: (line: string) => void;
}

interface Sent {
  conversation: ChaosConversation;
  cmid: string;
  kind: MessageKind;
  accepted: boolean;
}

async function drive(opts: ChaosOptions, plan: ReturnType<typeof chaosPlan>, w: World): Promise<ChaosReport> {
  const { stack, db, say } = w;
  const sim = new LlmSimAdminClient(stack.simUrl);
  // Whatever no test script claims (a cron result delivered to its home conversation) gets a plain answer.
  await sim.script({ replies: [{ content: 'noted' }], repeatLast: true });
  const gateways = () =>
    stack
      .byName('gateway')
      .filter((p) => live(p) && !stopped.has(p))
      .map((p) => p.url);
  const stopped = new Set<StackProcess>();
  const q = <T>(sql: string, params: unknown[] = []): Promise<T[]> => retrying(() => db.query<T[]>(sql, params));
  // Commands and delegations of the chaos source run without a human; file appends ask (the default).
  for (const tool of ['execute_cmd', 'execute_task'])
    await q(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, $2, 'chaos', 'allow', 1, 'chaos', 'test rule')`,
      [randomUUID(), tool],
    );
  const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
  const open = async (name: string): Promise<ChaosConversation> => {
    const api = await admin.createUser(`${name}-${randomUUID()}@skald.test`, 'correct horse battery');
    const c = new ChaosConversation(name, api.token!, api.user!.id, gateways);
    await c.connected(Date.now() + 60_000);
    w.conversations.push(c);
    return c;
  };
  const users = await Promise.all(Array.from({ length: opts.conversations }, (_, i) => open(`chaos${i}`)));
  const probe = await open('probe');

  // A cron job of its own user, firing every 5 s while the faults go on.
  const cronUser = await admin.createUser(`cron-${randomUUID()}@skald.test`, 'correct horse battery');
  const cronToken = `cron-${randomUUID()}`;
  await sim.script({
    match: cronToken,
    matchIn: 'last_user',
    replies: [{ content: `cron ran ${cronToken}` }],
    repeatLast: true,
  });
  const job = await cronUser.post<{ id: string }>('/api/cron/jobs', {
    title: 'chaos',
    prompt: `report ${cronToken}`,
    cron: '*/5 * * * * *',
  });
  if (job.status !== 201) throw new Error(`cron job not created: ${job.status} ${JSON.stringify(job.body)}`);

  const sent: Sent[] = [];
  const script = async (cmid: string, kind: MessageKind): Promise<void> => {
    const done = { content: `answer ${cmid}`, chunkSize: 12, latency: { betweenChunksMs: 20 } };
    const first = {
      plain: done,
      effect: {
        tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo ${cmid} >> effects.log`, timeout: 30 } }],
      },
      approval: { tool_calls: [{ name: 'append_file', arguments: { path: 'approved.log', content: `${cmid}\n` } }] },
      delegate: {
        tool_calls: [{ name: 'execute_task', arguments: { agent_id: 'generalist', prompt: `child of C${cmid}` } }],
      },
    }[kind];
    await sim.script({
      match: cmid,
      matchIn: 'last_user',
      replies: kind === 'plain' ? [done] : [first, done],
      repeatLast: true,
    });
    if (kind === 'delegate')
      await sim.script({
        match: `C${cmid}`,
        matchIn: 'last_user',
        replies: [{ content: 'child answer' }],
        repeatLast: true,
      });
  };

  /** Sends one message and waits (bounded) until it has an outcome; its record either way. */
  const talk = async (c: ChaosConversation, kind: MessageKind): Promise<Sent> => {
    const cmid = `m${randomUUID().replaceAll('-', '')}`;
    await script(cmid, kind);
    const deadline = Date.now() + MESSAGE_MS;
    const s: Sent = { conversation: c, cmid, kind, accepted: await c.send(cmid, `${kind} ${cmid}`, deadline) };
    sent.push(s);
    if (s.accepted) await settled(c, cmid, deadline).catch(() => undefined);
    return s;
  };

  const settled = async (c: ChaosConversation, cmid: string | null, deadline: number): Promise<void> => {
    for (let i = 0; ; i++) {
      const [r] = await q<{ turn_state: string; queued: number; inbox: string | null }>(
        `SELECT s.turn_state,
                (SELECT count(*)::int FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued') AS queued,
                (SELECT status FROM session_inbox i WHERE i.user_id = s.user_id AND i.client_message_id = $2) AS inbox
           FROM sessions s WHERE s.id = $1`,
        [c.sessionId, cmid ?? ''],
      ).catch(() => []);
      if (r && r.turn_state === 'finished' && r.queued === 0 && (cmid === null || r.inbox !== 'queued')) return;
      if (Date.now() > deadline) throw new Error(`${c.name}: not settled`);
      if (i % 8 === 7) await c.nudge(deadline).catch(() => undefined);
      await sleep(500);
    }
  };

  // ---- the run: conversations talk, the faults go on, one at a time, until the duration is up.
  const started = Date.now();
  const endAt = started + opts.durationMs;
  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const recoveryMs = Object.fromEntries(FAULT_KINDS.map((k) => [k, [] as number[]])) as Record<FaultKind, number[]>;
  const appFaults = Object.fromEntries(
    APP_FAULTS.map((k) => [k, Object.fromEntries(CHAOS_APPS.map((a) => [a, 0]))]),
  ) as ChaosReport['appFaults'];
  const talking = users.map(async (c, i) => {
    for (let k = 0; Date.now() < endAt; k++) await talk(c, messageKind(plan, i, k));
  });
  const faulting = (async () => {
    for (const step of plan.faults) {
      if (Date.now() > endAt) return;
      const healedAt = await inject(step, w, stopped, say);
      faults[step.kind]++;
      if (isAppFault(step.kind)) appFaults[step.kind][step.app]++;
      // Recovery: a fresh turn answered end to end after the fault was healed.
      const probeSent = await talk(probe, 'plain');
      if (probeSent.accepted) recoveryMs[step.kind].push(Date.now() - healedAt);
      say(`chaos: ${step.kind}${isAppFault(step.kind) ? ` ${step.app}` : ''} recovered in ${Date.now() - healedAt} ms`);
      await sleep(step.gapMs);
    }
  })();
  await Promise.all([...talking, faulting]);

  // ---- the checks, from outside, once every session has had its time to settle.
  await cronUser.post(`/api/cron/jobs/${job.body.id}/toggle`).catch(() => undefined);
  const settleBy = Date.now() + SETTLE_MS;
  await Promise.all(w.conversations.map((c) => settled(c, null, settleBy).catch(() => undefined)));
  return check(opts, w, sent, { faults, appFaults, recoveryMs, cronJob: job.body.id, probe, q });
}

/** Injects one fault and heals it; returns when it was healed. */
async function inject(
  step: FaultStep,
  w: World,
  stopped: Set<StackProcess>,
  say: (l: string) => void,
): Promise<number> {
  const { stack } = w;
  const targetOf = (app: ChaosApp): StackProcess | undefined => {
    const alive = stack.byName(app).filter((p) => live(p) && !stopped.has(p));
    return alive[step.pick % Math.max(1, alive.length)];
  };
  switch (step.kind) {
    case 'kill': {
      const p = targetOf(step.app);
      if (!p) break;
      say(`chaos: kill -9 ${p.instance}`);
      p.child.kill('SIGKILL');
      await sleep(step.holdMs);
      await again(say, `a new ${step.app}`, () => stack.addReplica(step.app));
      break;
    }
    case 'stop': {
      const p = targetOf(step.app);
      if (!p) break;
      say(`chaos: SIGSTOP ${p.instance} for ${step.holdMs + LEASE_TTL_MS} ms`);
      stopped.add(p);
      p.child.kill('SIGSTOP');
      // Past the lease: a stopped worker wakes to find its sessions driven by the other one.
      await sleep(step.holdMs + LEASE_TTL_MS);
      p.child.kill('SIGCONT');
      stopped.delete(p);
      break;
    }
    case 'nats':
      say(`chaos: NATS killed for ${step.holdMs} ms`);
      await w.nats.kill();
      await sleep(step.holdMs);
      await w.nats.start();
      break;
    case 'redis':
      say(`chaos: Redis killed for ${step.holdMs} ms`);
      await w.redis.kill();
      await sleep(step.holdMs);
      await w.redis.start();
      break;
    case 'pg':
      say(`chaos: Postgres restarted, down ${step.holdMs} ms`);
      await w.pg.restart(step.holdMs);
      break;
    case 'pgterm': {
      const rows = await retrying(() =>
        w.db.query<Array<{ n: number }>>(
          `SELECT count(*)::int AS n FROM (
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND usename <> 'postgres') t`,
        ),
      );
      say(`chaos: ${rows[0]?.n ?? 0} Postgres backends terminated`);
      break;
    }
  }
  return Date.now();
}

async function check(
  opts: ChaosOptions,
  w: World,
  sent: Sent[],
  ctx: {
    faults: Record<FaultKind, number>;
    appFaults: ChaosReport['appFaults'];
    recoveryMs: Record<FaultKind, number[]>;
    cronJob: string;
    probe: ChaosConversation;
    q: <T>(sql: string, params?: unknown[]) => Promise<T[]>;
  },
): Promise<ChaosReport> {
  const { stack, db } = w;
  const { q } = ctx;
  const violations: string[] = [];
  const counts: ChaosReport['counts'] = {
    lost: 0,
    dup: 0,
    noOutcome: 0,
    effectTwice: 0,
    effectMissing: 0,
    replayGaps: 0,
    replayMismatch: 0,
    dupDelivery: 0,
    stuck: 0,
    cronTwice: 0,
  };
  const accepted = sent.filter((s) => s.accepted);

  // Every accepted message in its conversation's history exactly once, and an outcome the user sees
  // after it: an answer (a later assistant row), or the message marked failed, or an error event.
  for (const s of accepted) {
    const rows = await q<{ id: string; ord: string; status: string; answered: boolean; errored: boolean }>(
      `SELECT h.id, h.ord, h.status,
              EXISTS (SELECT 1 FROM chat_history a WHERE a.session_id = h.session_id AND a.frame_id = h.frame_id
                        AND a.ord > h.ord AND a.role = 'assistant') AS answered,
              EXISTS (SELECT 1 FROM session_events e WHERE e.session_id = h.session_id AND e.type = 'error'
                        AND e.seq > (SELECT u.seq FROM session_events u WHERE u.session_id = h.session_id
                                        AND u.type = 'user_message' AND u.payload::jsonb->>'message_id' = h.id::text LIMIT 1)) AS errored
         FROM chat_history h WHERE h.session_id = $1 AND h.role = 'user' AND h.client_message_id = $2`,
      [s.conversation.sessionId, s.cmid],
    );
    if (rows.length === 0) {
      counts.lost++;
      violations.push(
        `lost: ${s.conversation.name} ${s.kind} message ${s.cmid} was acknowledged but is not in the history`,
      );
    } else if (rows.length > 1) {
      counts.dup++;
      violations.push(`dup: ${s.conversation.name} message ${s.cmid} is in the history ${rows.length} times`);
    }
    const r = rows[0];
    if (r && !r.answered && r.status !== 'failed' && !r.errored) {
      counts.noOutcome++;
      violations.push(`no outcome: ${s.conversation.name} ${s.kind} message ${s.cmid} has no answer, failure or error`);
    }
  }

  // No side effect twice: every command's and every approved append's line at most once; a call
  // that reported done has its line.
  for (const c of w.conversations) {
    const lines = ['effects.log', 'approved.log'].flatMap((f) => {
      try {
        return readFileSync(path.join(stack.env.SKALD_WORKSPACES, c.userId, f), 'utf8')
          .split('\n')
          .filter(Boolean);
      } catch {
        return [];
      }
    });
    const times = new Map<string, number>();
    for (const l of lines) times.set(l, (times.get(l) ?? 0) + 1);
    for (const [marker, n] of times)
      if (n > 1) {
        counts.effectTwice++;
        violations.push(`side effect twice: ${c.name} ${marker} ran ${n} times`);
      }
    const done = await q<{ arguments: string }>(
      `SELECT arguments::text FROM tool_calls WHERE session_id = $1 AND status = 'done' AND name IN ('execute_cmd', 'append_file')`,
      [c.sessionId],
    );
    for (const d of done) {
      const marker = /m[0-9a-f]{32}/.exec(d.arguments)?.[0];
      if (marker && !times.has(marker)) {
        counts.effectMissing++;
        violations.push(`side effect missing: ${c.name} ${marker} reported done but never ran`);
      }
    }
  }

  // Delivery: a fresh socket's replay is 1..last_seq without a gap and equals what the client
  // received live (after its own resumes), event for event.
  const gateway = stack.byName('gateway').find(live)!.url;
  for (const c of w.conversations) {
    await c.nudge(Date.now() + 30_000).catch(() => undefined);
    await sleep(300);
    const replay = await c.replay(gateway);
    const [s] = await q<{ last_seq: string }>(`SELECT last_seq FROM sessions WHERE id = $1`, [c.sessionId]);
    const last = Number(s?.last_seq ?? 0);
    const seqs = replay.map((f) => f.seq as number);
    if (seqs.length !== last || seqs.some((x, i) => x !== i + 1)) {
      counts.replayGaps++;
      violations.push(`replay gap: ${c.name} replayed seqs [${seqs.join(',')}] for last_seq ${last}`);
    }
    for (const f of replay) {
      const got = c.received.get(f.seq as number);
      if (!got || JSON.stringify(got) !== JSON.stringify(f)) {
        counts.replayMismatch++;
        violations.push(
          `replay differs from live: ${c.name} seq ${String(f.seq)} live ${got ? JSON.stringify(got) : 'never delivered'} replay ${JSON.stringify(f)}`,
        );
      }
    }
    counts.dupDelivery += c.duplicateDeliveries + c.differingDeliveries;
    if (c.duplicateDeliveries + c.differingDeliveries > 0)
      violations.push(
        `duplicate delivery: ${c.name} got ${c.duplicateDeliveries} events twice on one connection, ${c.differingDeliveries} with other content`,
      );
  }

  // No stuck session (of this run's users, cron sessions included), and RELIABILITY.md's invariants.
  const stuck = await q<{ id: string; turn_state: string; queued: number }>(
    `SELECT s.id, s.turn_state,
            (SELECT count(*)::int FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued') AS queued
       FROM sessions s
      WHERE s.turn_state <> 'finished' OR EXISTS (SELECT 1 FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued')`,
  );
  counts.stuck = stuck.length;
  for (const s of stuck) violations.push(`stuck: session ${s.id} is ${s.turn_state} with ${s.queued} queued`);
  violations.push(...(await retrying(() => invariantViolations(db))));

  // The cron job: never two runs for one due time, every run ended.
  const runs = await q<{ due_at: Date; delivered_at: Date | null; status: string }>(
    `SELECT due_at, delivered_at, status FROM job_runs WHERE job_id = $1`,
    [ctx.cronJob],
  );
  counts.cronTwice = runs.length - new Set(runs.map((r) => r.due_at.getTime())).size;
  if (counts.cronTwice > 0) violations.push(`cron: ${counts.cronTwice} due times ran twice`);
  if (runs.length === 0) violations.push('cron: the job never ran');
  for (const r of runs.filter((x) => x.delivered_at === null))
    violations.push(`cron: the run due ${r.due_at.toISOString()} is ${r.status}, never delivered`);

  const byKind = { plain: 0, effect: 0, approval: 0, delegate: 0 };
  for (const s of accepted) if (s.conversation !== ctx.probe) byKind[s.kind]++;
  return {
    seed: opts.seed,
    durationMs: opts.durationMs,
    conversations: opts.conversations,
    sent: sent.length,
    accepted: accepted.length,
    byKind,
    faults: ctx.faults,
    appFaults: ctx.appFaults,
    recoveryMs: ctx.recoveryMs,
    approvals: w.conversations.reduce((n, c) => n + c.approvalsSent, 0),
    cronRuns: runs.length,
    violations,
    counts,
  };
}

/**
 * Up to three tries of a process start: on a loaded machine an app's first NATS request at start
 * can time out ("failed to start"), which is no fault of the run's.
 */
async function again<T>(say: (l: string) => void, what: string, start: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (e) {
      if (i >= 3) throw e;
      say(`chaos: ${what} did not start (${String(e).split('\n')[0]}); trying again`);
    }
  }
}

function startStack(say: (l: string) => void, options: Parameters<typeof Stack.start>[0]): Promise<Stack> {
  return again(say, 'the stack', () => Stack.start(options));
}

/**
 * A query (or check) while Postgres may be restarting: tried again for up to 60 s. A statement the
 * server refused as wrong (SQLSTATE class 22 or 42) fails at once.
 */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (Date.now() > deadline || (typeof code === 'string' && /^(22|42)/.test(code))) throw e;
      await sleep(500);
    }
  }
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  // Nearest rank: the smallest value with at least p % of them at or below it.
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
};

/** The one line a chaos run prints: its seed (to replay it), its load, its faults, its invariants, PASS or FAIL. */
export function figuresLine(r: ChaosReport): string {
  const byApp = (k: AppFault): string => {
    const hit = CHAOS_APPS.filter((a) => r.appFaults[k][a] > 0).map((a) => `${a}:${r.appFaults[k][a]}`);
    return hit.length > 0 ? `(${hit.join(',')})` : '';
  };
  const faults = FAULT_KINDS.map((k) => `${k}:${r.faults[k]}${isAppFault(k) ? byApp(k) : ''}`).join(' ');
  const recovery = FAULT_KINDS.filter((k) => r.recoveryMs[k].length > 0)
    .map((k) => `${k}:${pct(r.recoveryMs[k], 50)}/${Math.max(...r.recoveryMs[k])}`)
    .join(' ');
  const c = r.counts;
  return [
    `chaos seed=${r.seed} duration_s=${Math.round(r.durationMs / 1000)} conversations=${r.conversations}`,
    `messages=${r.sent} accepted=${r.accepted} (plain:${r.byKind.plain} effect:${r.byKind.effect} approval:${r.byKind.approval} delegate:${r.byKind.delegate})`,
    `approvals_sent=${r.approvals} cron_runs=${r.cronRuns}`,
    `faults=${faults}`,
    `lost=${c.lost} dup=${c.dup} no_outcome=${c.noOutcome} effect_twice=${c.effectTwice} effect_missing=${c.effectMissing}`,
    `replay_gaps=${c.replayGaps} replay_mismatch=${c.replayMismatch} dup_delivery=${c.dupDelivery} stuck=${c.stuck} cron_twice=${c.cronTwice}`,
    `recovery_ms(p50/max)=${recovery || '-'}`,
    `violations=${r.violations.length} ${r.violations.length === 0 ? 'PASS' : 'FAIL'}`,
  ].join(' ');
}
