import { expect } from '@jest/globals';
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { connect, NatsConnection, StringCodec } from 'nats';
import type { z } from 'zod';
import {
  ADMIN_ONLY_RUN_CONTEXT_FIELDS,
  ClientFrame,
  expressPath,
  ROUTES,
  RouteDef,
  SUBJECTS,
  type RequestSubject,
} from '@skald/contracts';
import { PrivateNats, recordAttackSuite } from '@skald/testing';
import { routeTable } from '../support/gateway-routes';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(120_000);

/**
 * Policy is an admin's choice on every path. The routes that take a field
 * choosing rules (`ADMIN_ONLY_RUN_CONTEXT_FIELDS`) are found, not listed: every route of the app
 * (Nest metadata, the same derivation as gateway-route-auth.spec.ts), its body schema from the
 * OpenAPI table (whose completeness that spec checks), walked for those fields. Each is sent the
 * field as a user (refused, naming it, and nothing reaches a service) and as an admin (passed on).
 * The services behind the gateway are one recording double on a private NATS.
 */

type Path = string[];

/** Every place in a schema's input where one of `fields` is accepted as an object key. */
export function fieldLocations(schema: z.ZodType, fields: readonly string[]): Path[] {
  const out: Path[] = [];
  const seen = new Set<unknown>();
  const walk = (s: unknown, path: Path, depth: number): void => {
    if (depth > 40) throw new Error(`schema deeper than 40 at ${path.join('.')}`);
    const def = (s as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    if (seen.has(s) && def.type === 'lazy') return;
    seen.add(s);
    switch (def.type) {
      case 'object': {
        for (const [k, v] of Object.entries(def.shape as Record<string, unknown>)) {
          if (fields.includes(k)) out.push([...path, k]);
          walk(v, [...path, k], depth + 1);
        }
        const catchall = def.catchall as { _zod: { def: { type: string } } } | undefined;
        // an object that keeps unknown keys accepts every field
        if (catchall && catchall._zod.def.type !== 'never') for (const f of fields) out.push([...path, f]);
        return;
      }
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'nonoptional':
      case 'readonly':
      case 'catch':
        return walk(def.innerType, path, depth + 1);
      case 'pipe':
        return walk(def.in, path, depth + 1);
      case 'union':
        for (const o of def.options as unknown[]) walk(o, path, depth + 1);
        return;
      case 'intersection':
        walk(def.left, path, depth + 1);
        return walk(def.right, path, depth + 1);
      case 'array':
        return walk(def.element, [...path, '0'], depth + 1);
      case 'lazy':
        return walk((def.getter as () => unknown)(), path, depth + 1);
      case 'record':
        // a record's keys are data (tool arguments, headers), not a RunContext
        return;
      case 'string':
      case 'number':
      case 'int':
      case 'boolean':
      case 'bigint':
      case 'date':
      case 'enum':
      case 'literal':
      case 'null':
      case 'undefined':
      case 'unknown':
      case 'any':
      case 'never':
      case 'custom':
      case 'transform':
      case 'template_literal':
        return;
      default:
        throw new Error(`fieldLocations: schema type ${def.type} at ${path.join('.') || '(root)'} is not walked`);
    }
  };
  walk(schema, [], 0);
  return out;
}

const setAt = (base: Record<string, unknown>, path: Path, value: unknown): Record<string, unknown> => {
  const copy = structuredClone(base);
  let o = copy;
  for (const k of path.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[path[path.length - 1]] = value;
  return copy;
};

/** Whether `value` appears anywhere in `v` under the key `key`. */
function carries(v: unknown, key: string, value: unknown): boolean {
  if (Array.isArray(v)) return v.some((x) => carries(x, key, value));
  if (v === null || typeof v !== 'object') return false;
  return Object.entries(v).some(([k, x]) => (k === key && x === value) || carries(x, key, value));
}

/**
 * A valid body for each route found to take an admin-only field, without that field. A route the
 * derivation finds with no sample here fails the test: add one (and refuse the field there).
 */
/** The route that ends the session it is called with. */
const SIGN_OUT_PATH = '/api/auth/logout';

const SAMPLES: Record<string, (ctx: { sessionId: string }) => Record<string, unknown>> = {
  'put /api/sessions/:id/run-context': () => ({}),
  'post /api/cron/jobs': () => ({ title: 'nightly', prompt: 'write notes', cron: '0 3 * * *' }),
  'patch /api/cron/jobs/:id': () => ({}),
  'post /api/approval/rules/test': ({ sessionId }) => ({ tool_name: 'read_file', session_id: sessionId }),
  // the rule's own group: the console's rule routes are admin-only as a whole (the guard refuses a user)
  'post /api/approval/rules': () => ({ tool_pattern: 'read_file', action: 'allow', priority: 10 }),
  'patch /api/approval/rules/:id': () => ({ note: 'n' }),
};

interface Recorded {
  subject: string;
  payload: unknown;
}

describe('policy is chosen by admins only: every route and frame that takes a field choosing rules', () => {
  let nats: PrivateNats;
  let nc: NatsConnection;
  let gw: InProcessGateway;
  let adminToken = '';
  let userToken = '';
  let userId = '';
  let userEmail = '';
  const recorded: Recorded[] = [];
  const userSession = randomUUID();
  const otherSession = randomUUID();
  const sc = StringCodec();
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };

  /** What a real check of the user's session carries: its agent, source, the group an admin set, its paths. */
  const USER_SESSION_GATE_CONTEXT = {
    agent_id: 'researcher',
    source: 'mobile',
    security_group: 'night',
    auto_deny: false,
    run_context: { working_directory: '/workspace/proj', allow_fs_reads: [], allow_fs_writes: ['/workspace/proj/out'] },
  };
  /** The services' answers: the user's session has a group an admin set; everything else is not found. */
  function answer(subject: string, payload: { actor?: { userId: string }; session_id?: string }): unknown {
    if (subject === 'session.gate_context' && payload.session_id === userSession && payload.actor?.userId === userId)
      return { ok: true, data: USER_SESSION_GATE_CONTEXT };
    if (subject === 'session.replay' && payload.session_id === userSession)
      return { ok: true, data: { events: [], last_seq: 0, running: false } };
    if (subject === 'approval.rules.test')
      return { ok: true, data: { decision: 'require', reason: 'test double', by: 'rule' } };
    // the user is in no group: the tester adds no group's security groups
    if (subject === 'groups.policy' && payload.actor?.userId === userId)
      return { ok: true, data: { groups: [], allowed_agents: null, allowed_llm_clients: null, security_groups: [] } };
    return { ok: false, error: { code: 'not_found', message: 'test double: not found' } };
  }

  const call = async (method: string, path: string, token: string, body: unknown) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let json: { error?: { code?: string; field?: string } } = {};
    try {
      json = JSON.parse(text) as typeof json;
    } catch {
      // not JSON: the status says enough
    }
    return { status: res.status, json, text };
  };

  const login = async (email: string, password: string) => {
    const r = await fetch(`${gw.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    expect(r.status).toBe(200);
    return (await r.json()) as { token: string; user: { id: string } };
  };

  beforeAll(async () => {
    nats = await PrivateNats.start();
    nc = await connect({ servers: nats.url });
    const served = (Object.keys(SUBJECTS) as RequestSubject[]).filter((s) => SUBJECTS[s].queue !== 'gateway');
    for (const subject of [...served, 'session.submit.*']) {
      nc.subscribe(subject, {
        callback: (_err, msg) => {
          const payload = JSON.parse(sc.decode(msg.data)) as Parameters<typeof answer>[1];
          recorded.push({ subject: msg.subject, payload });
          msg.respond(sc.encode(JSON.stringify(answer(msg.subject, payload))));
        },
      });
    }
    await nc.flush();
    gw = await startGateway(
      gatewayEnv({ NATS_URL: nats.url, SKALD_ADMIN_EMAIL: admin.email, SKALD_ADMIN_PASSWORD: admin.password }),
      `gw-policy-${process.pid}`,
    );
    adminToken = (await login(admin.email, admin.password)).token;
    const email = `user-${randomUUID()}@skald.test`;
    expect((await call('post', '/api/admin/users', adminToken, { email, password: 'user password 123' })).status).toBe(
      201,
    );
    userEmail = email;
    const user = await login(email, 'user password 123');
    userToken = user.token;
    userId = user.user.id;
  });

  afterAll(async () => {
    await gw?.close();
    await nc?.close();
    await nats?.destroy();
  });

  it('no WebSocket frame accepts a field that chooses rules', () => {
    expect(fieldLocations(ClientFrame, ADMIN_ONLY_RUN_CONTEXT_FIELDS)).toEqual([]);
  });

  it('every route whose body takes a field that chooses rules refuses it from a user (403 naming it) and passes it on for an admin', async () => {
    const { routes } = routeTable(gw);
    const bodies = new Map(
      Object.values(ROUTES as Record<string, RouteDef>).map((r) => [
        `${r.method} ${expressPath(r.path)}`,
        r.body === 'multipart' ? undefined : r.body,
      ]),
    );
    const found = routes.flatMap((r) => {
      const key = `${r.method} ${r.path}`;
      const schema = bodies.get(key);
      return schema ? fieldLocations(schema, ADMIN_ONLY_RUN_CONTEXT_FIELDS).map((loc) => ({ r, key, loc })) : [];
    });
    // the derivation finds at least the routes known today
    expect(new Set(found.map((f) => f.key))).toEqual(new Set(Object.keys(SAMPLES)));
    const failures: string[] = [];
    let probes = 0;
    for (const { r, key, loc } of found) {
      const path = r.path.replace(/:\w+/g, key.includes('sessions') ? userSession : randomUUID());
      const base = SAMPLES[key]({ sessionId: userSession });
      const where = loc.join('.');
      for (const value of [`ops-${randomUUID().slice(0, 8)}`, '', null]) {
        probes++;
        const before = recorded.length;
        const res = await call(r.method, path, userToken, setAt(base, loc, value));
        const leaked = recorded.slice(before).filter((m) => carries(m.payload, loc[loc.length - 1], value));
        // an admin-only route is refused whole by its guard; any other names the field
        const named = r.auth === 'admin' || res.json.error?.field === where;
        if (![400, 403].includes(res.status) || !named)
          failures.push(`user ${key} ${where}=${JSON.stringify(value)} → ${res.status} ${res.text.slice(0, 160)}`);
        if (leaked.length > 0)
          failures.push(
            `user ${key} ${where}=${JSON.stringify(value)} reached ${leaked.map((m) => m.subject).join(', ')}`,
          );
      }
      // an admin's is passed on to the service that keeps it
      const nonce = `ops-${randomUUID().slice(0, 8)}`;
      const before = recorded.length;
      const adminBase = key === 'post /api/approval/rules/test' ? { tool_name: 'read_file' } : base;
      const res = await call(r.method, path, adminToken, setAt(adminBase, loc, nonce));
      if (
        [400, 403].includes(res.status) ||
        !recorded.slice(before).some((m) => carries(m.payload, loc.at(-1)!, nonce))
      )
        failures.push(`admin ${key} ${where} → ${res.status} ${res.text.slice(0, 160)}, not passed on`);
    }
    // every other body-taking route: a user's field that chooses rules, at the top or in a
    // run_context, never reaches a service
    const others = routes.filter(
      (r) => ['post', 'put', 'patch'].includes(r.method) && r.auth !== 'public' && !found.some((f) => f.r === r),
    );
    for (const r of others) {
      probes++;
      const nonce = `ops-${randomUUID().slice(0, 8)}`;
      const probe = Object.fromEntries(ADMIN_ONLY_RUN_CONTEXT_FIELDS.map((f) => [f, nonce]));
      const before = recorded.length;
      // sign-out ends the session it is called with: it gets a session of its own
      const token = r.path === SIGN_OUT_PATH ? (await login(userEmail, 'user password 123')).token : userToken;
      await call(r.method, r.path.replace(/:\w+/g, userSession), token, { ...probe, run_context: probe });
      for (const f of ADMIN_ONLY_RUN_CONTEXT_FIELDS) {
        const leaked = recorded.slice(before).filter((m) => carries(m.payload, f, nonce));
        if (leaked.length > 0) failures.push(`user ${r.method} ${r.path} ${f} reached ${leaked[0].subject}`);
      }
    }
    console.log(
      `admin-only fields: ${found.length} route locations found of ${routes.length} routes, ${others.length} other body routes probed, ${probes} user probes, ${failures.length} let through`,
    );
    recordAttackSuite('routes', 'admin-only-fields', {
      routes_taking_policy: new Set(found.map((f) => f.key)).size,
      user_probes: probes,
      let_through: failures.length,
    });
    expect(failures).toEqual([]);
  });

  it("the rule tester evaluates, for a user, only the group an admin put on the user's own session", async () => {
    const tested = () => recorded.filter((m) => m.subject === 'approval.rules.test');
    const n = tested().length;
    // the user's session: evaluated under the group an admin set on it, as the user
    const own = await call('post', '/api/approval/rules/test', userToken, {
      tool_name: 'read_file',
      session_id: userSession,
    });
    expect(own.status).toBe(200);
    // evaluated with what the gate is asked with for a call of that session: its agent, source,
    // group and RunContext, not the tester's defaults (main, web, no paths)
    expect(tested().slice(n)).toEqual([
      {
        subject: 'approval.rules.test',
        payload: expect.objectContaining({
          agent_id: 'researcher',
          source: 'mobile',
          security_group: 'night',
          run_context: USER_SESSION_GATE_CONTEXT.run_context,
          auto_deny: false,
          actor: { userId, role: 'user' },
        }),
      },
    ]);
    // naming another agent or source than the session's is refused, naming the field; nothing evaluated
    for (const [field, value] of [
      ['agent_id', 'main'],
      ['source', 'web'],
    ] as const) {
      const other = await call('post', '/api/approval/rules/test', userToken, {
        tool_name: 'read_file',
        session_id: userSession,
        [field]: value,
      });
      expect([other.status, other.json.error?.field]).toEqual([400, field]);
    }
    // a group of the user's choosing: refused, naming the field; nothing evaluated
    const chosen = await call('post', '/api/approval/rules/test', userToken, {
      tool_name: 'execute_cmd',
      arguments: { command: 'rm -rf /workspace' },
      session_id: userSession,
      security_group: 'ops',
    });
    expect(chosen.status).toBe(403);
    expect(chosen.json.error).toMatchObject({ code: 'forbidden', field: 'security_group' });
    // another user's session: not found (its bypasses and group are not the caller's to read)
    const foreign = await call('post', '/api/approval/rules/test', userToken, {
      tool_name: 'read_file',
      session_id: otherSession,
    });
    expect(foreign.status).toBe(404);
    // no session: an admin's tool
    const none = await call('post', '/api/approval/rules/test', userToken, { tool_name: 'read_file' });
    expect(none.status).toBe(403);
    expect(tested().length).toBe(n + 1);
    // an admin tests any group
    const asAdmin = await call('post', '/api/approval/rules/test', adminToken, {
      tool_name: 'read_file',
      security_group: 'ops',
    });
    expect(asAdmin.status).toBe(200);
    expect(tested().at(-1)?.payload).toMatchObject({ security_group: 'ops', actor: { role: 'admin' } });
  });
});
