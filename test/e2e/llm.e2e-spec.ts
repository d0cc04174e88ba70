import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, PrivateRedis, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(240_000);

const BUDGET = 20_000;
/** The workers read the shared LLM health at most this often (ms): a change is seen by both within it. */
const HEALTH_CACHE_MS = 200;

interface ClientInfo {
  number: number;
  name: string;
  model: string;
  health: 'healthy' | 'degraded' | 'down';
  consecutive_failures: number;
  last_error: string | null;
  pinned: boolean;
}
interface ClientList {
  items: ClientInfo[];
  pinned: string | null;
  health_scope: 'shared' | 'local';
}

/**
 * LLM clients through the real gateway: two named clients on llm-sim (two worker
 * replicas sharing health through Redis), one failed by llm-sim's admin API. Fallback and its
 * event, degraded health on GET /api/llm/clients, /models, /model and select_client pins, /cost and
 * the debug tree's tokens and cost, and the daily budget's `exhausted` error.
 */
describe('LLM clients through the gateway: fallback, shared health, pins, cost, budget', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2 },
      // One try per client: these tests follow the fallback between clients and the health count of
      // each failure; retries on the same client are llm-adapter.sim.integration-spec's (session worker).
      perApp: {
        'session-worker': {
          SKALD_USER_DAILY_TOKENS: String(BUDGET),
          SKALD_LLM_RETRY_TRIES: '1',
          SKALD_LLM_HEALTH_CACHE_MS: String(HEALTH_CACHE_MS),
        },
      },
      llmClients: (simUrl) => [
        {
          name: 'primary',
          baseUrl: simUrl,
          model: 'sim-primary',
          apiKeyEnv: 'OPENAI_API_KEY',
          strength: 'high',
          priority: 1,
          inputCostPerMillion: 1,
          outputCostPerMillion: 2,
        },
        {
          name: 'backup',
          baseUrl: simUrl,
          model: 'sim-backup',
          apiKeyEnv: 'OPENAI_API_KEY',
          strength: 'medium',
          priority: 2,
          inputCostPerMillion: 3,
          outputCostPerMillion: 6,
        },
      ],
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });

  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  async function connect(user: ApiClient, source: string): Promise<{ ws: WsTestClient; sessionId: string }> {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    await ws.waitForType('turn_running');
    return { ws, sessionId };
  }

  /** Sends a message and waits for the turn's `done` or `error` (session events of that turn). */
  async function turn(ws: WsTestClient, content: string): Promise<Frame[]> {
    const from = ws.frames.length;
    const id = `c-${randomUUID()}`;
    ws.send({ type: 'message', client_message_id: id, content });
    const ack = await ws.waitFor((f) => f.type === 'ack' && f.client_message_id === id, 30_000, from);
    await ws.waitFor((f) => (f.type === 'done' || f.type === 'error') && typeof f.seq === 'number', 60_000, from);
    const frames = ws.frames.slice(from);
    expect(frames.find((f) => f.type === 'user_message')).toMatchObject({ message_id: ack.message_id });
    return frames;
  }

  async function command(ws: WsTestClient, content: string): Promise<string> {
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content });
    const result = await ws.waitFor((f) => f.type === 'command_result', 30_000, from);
    return result.content as string;
  }

  it('falls back to the backup on a 503, announces it, and after three failures the primary shows degraded on every replica', async () => {
    const alice = await admin.createUser(`alice-${randomUUID()}@skald.test`, 'correct horse battery');
    const { ws } = await connect(alice, 'web');
    const marker = `[FB-${randomUUID()}]`;
    await sim.script({
      match: marker,
      model: 'sim-primary',
      replies: [{ fail: { kind: 'http_error', status: 503, message: 'primary is overloaded' } }],
      repeatLast: true,
    });
    await sim.script({
      match: marker,
      model: 'sim-backup',
      replies: [{ content: 'The backup answers.' }],
      repeatLast: true,
    });

    for (let i = 1; i <= 3; i++) {
      const frames = await turn(ws, `question ${i} ${marker}`);
      const fallback = frames.find((f) => f.type === 'model_fallback');
      expect(fallback).toMatchObject({ from: 'primary', to: 'backup' });
      expect(String(fallback?.reason)).toContain('503');
      expect(frames.find((f) => f.type === 'done')).toMatchObject({ content: 'The backup answers.' });
    }
    const primaryCalls = await sim.requests({ contains: marker });
    expect(primaryCalls.filter((r) => (r.body as { model: string }).model === 'sim-primary')).toHaveLength(3);

    // Health is kept in Redis: whichever of the two replicas answers, it has seen all three failures.
    for (let i = 0; i < 6; i++) {
      const r = await alice.get<ClientList>('/api/llm/clients');
      expect(r.status).toBe(200);
      expect(r.body.health_scope).toBe('shared');
      expect(r.body.items.map((c) => [c.number, c.name, c.model, c.health, c.consecutive_failures])).toEqual([
        [1, 'primary', 'sim-primary', 'degraded', 3],
        [2, 'backup', 'sim-backup', 'healthy', 0],
      ]);
      expect(r.body.items[0].last_error).toContain('primary is overloaded');
      expect(JSON.stringify(r.body)).not.toContain('sk-test-sim');
    }

    // Degraded: AUTO now goes to the healthy backup first, no fallback needed — on either replica once
    // its cached read of the shared health is older than SKALD_LLM_HEALTH_CACHE_MS.
    await new Promise((r) => setTimeout(r, HEALTH_CACHE_MS + 50));
    const fourth = await turn(ws, `question 4 ${marker}`);
    expect(fourth.some((f) => f.type === 'model_fallback')).toBe(false);
    expect(fourth.find((f) => f.type === 'done')).toMatchObject({ content: 'The backup answers.' });

    const models = await command(ws, '/models');
    expect(models).toMatch(/1\. primary: sim-primary.*degraded \(3 failures in a row/);
    expect(models).toMatch(/2\. backup: sim-backup.*healthy/);
    expect(models).toContain('No pin for web');
    ws.close();
  });

  it('/model pins by number and by name for this source only, durably; auto clears; select_client validates the name', async () => {
    const bob = await admin.createUser(`bob-${randomUUID()}@skald.test`, 'correct horse battery');
    const { ws } = await connect(bob, 'web');
    const marker = `[PIN-${randomUUID()}]`;
    await sim.script({ match: marker, replies: [{ content: 'pinned answer' }], repeatLast: true });

    expect(await command(ws, '/model 2')).toBe('Pinned backup for web. /model auto clears it.');
    const listed = await bob.get<ClientList>('/api/llm/clients?source=web');
    expect(listed.body.pinned).toBe('backup');
    expect(listed.body.items.find((c) => c.name === 'backup')?.pinned).toBe(true);
    expect((await bob.get<ClientList>('/api/llm/clients?source=cli')).body.pinned).toBeNull();
    expect(await command(ws, '/models')).toMatch(/2\. backup: .*\[pinned\][\s\S]*Pinned for web: backup\./);

    await turn(ws, `hello ${marker}`);
    const [first] = await sim.requests({ contains: marker });
    expect((first.body as { model: string }).model).toBe('sim-backup');

    // The pin is a row in Postgres, per user and source: a new conversation keeps it.
    const pinRows: Array<{ client: string }> = await db.query(
      `SELECT client FROM llm_client_pins WHERE user_id = $1 AND source = 'web'`,
      [bob.user!.id],
    );
    expect(pinRows).toEqual([{ client: 'backup' }]);
    await command(ws, '/new');
    await turn(ws, `again ${marker}`);
    const afterNew = await sim.requests({ contains: `again ${marker}` });
    expect((afterNew[0].body as { model: string }).model).toBe('sim-backup');

    expect(await command(ws, '/model primary')).toBe('Pinned primary for web. /model auto clears it.');
    expect(await command(ws, '/model 7')).toBe(
      'there is no model number 7; choose 1-2, one of primary, backup, or auto',
    );
    expect(await command(ws, '/model gpt-9')).toContain('unknown model "gpt-9"');
    expect((await bob.get<ClientList>('/api/llm/clients?source=web')).body.pinned).toBe('primary');
    expect(await command(ws, '/model auto')).toBe('Pin cleared: web uses AUTO (by strength, scope and health).');
    expect((await bob.get<ClientList>('/api/llm/clients?source=web')).body.pinned).toBeNull();

    const from = ws.frames.length;
    ws.send({ type: 'select_client', client: 'nope' });
    expect(await ws.waitFor((f) => f.type === 'error', 20_000, from)).toMatchObject({
      code: 'invalid_input',
      field: 'client',
    });
    ws.send({ type: 'select_client', client: 'backup' });
    expect(await ws.waitFor((f) => f.type === 'client_selected', 20_000, from)).toMatchObject({ client: 'backup' });
    expect((await bob.get<ClientList>('/api/llm/clients?source=web')).body.pinned).toBe('backup');
    ws.close();
  });

  it('/cost sums the tokens and cost of the conversation, and the debug tree shows them per message', async () => {
    const carol = await admin.createUser(`carol-${randomUUID()}@skald.test`, 'correct horse battery');
    const { ws, sessionId } = await connect(carol, 'cli');
    const marker = `[COST-${randomUUID()}]`;
    await sim.script({
      match: marker,
      model: 'sim-backup',
      replies: [{ content: 'costly answer', usage: { prompt_tokens: 1000, completion_tokens: 100 } }],
      repeatLast: true,
    });
    await command(ws, '/model backup');
    await turn(ws, `one ${marker}`);
    await turn(ws, `two ${marker}`);

    const cost = await command(ws, '/cost');
    // 2 calls × (1000 × $3 + 100 × $6) per million = $0.0072
    expect(cost).toContain('This conversation: 2,200 tokens (2,000 in, 200 out) in 2 model calls, $0.0072.');
    expect(cost).toContain('backup (sim-backup): 2,200 tokens');
    expect(cost).toContain(`of the deployment's daily token limit of ${BUDGET.toLocaleString('en-US')} used`);

    const detail = await carol.get<{ messages: Array<Record<string, unknown>> }>(`/api/sessions/${sessionId}`);
    const answers = detail.body.messages.filter((m) => m.kind === 'assistant');
    expect(answers).toHaveLength(2);
    for (const a of answers) {
      expect(a).toMatchObject({
        input_tokens: 1000,
        output_tokens: 100,
        cost_usd: 0.0036,
        tokens_estimated: false,
        client: 'backup',
        model: 'sim-backup',
      });
    }
    ws.close();
  });

  it('a user over the daily token budget gets error exhausted naming the budget and when it resets', async () => {
    const dave = await admin.createUser(`dave-${randomUUID()}@skald.test`, 'correct horse battery');
    const { ws } = await connect(dave, 'web');
    const marker = `[BIG-${randomUUID()}]`;
    await sim.script({
      match: marker,
      replies: [{ content: 'a very long answer', usage: { prompt_tokens: BUDGET + 5_000, completion_tokens: 10 } }],
      repeatLast: true,
    });
    const first = await turn(ws, `first ${marker}`);
    expect(first.find((f) => f.type === 'done')).toMatchObject({ input_tokens: BUDGET + 5_000 });

    const second = await turn(ws, `second ${marker}`);
    const error = second.find((f) => f.type === 'error');
    expect(error).toMatchObject({ code: 'exhausted' });
    expect(String(error?.message)).toContain(
      `The deployment's daily token limit of ${BUDGET.toLocaleString('en-US')} is used up: 25,010 tokens used today`,
    );
    expect(String(error?.message)).toMatch(/resets at 00:00 UTC on \d{4}-\d\d-\d\d \(in /);
    expect(second.some((f) => f.type === 'done')).toBe(false);
    expect(await sim.requests({ contains: `second ${marker}` })).toHaveLength(0);
    // Another user is not affected.
    const erin = await admin.createUser(`erin-${randomUUID()}@skald.test`, 'correct horse battery');
    const other = await connect(erin, 'web');
    const ok = await turn(other.ws, `hello ${marker}`);
    expect(ok.some((f) => f.type === 'done')).toBe(true);
    other.ws.close();
    ws.close();
  });

  it('when every client fails, llm_failed names both and the turn ends with error llm_failed', async () => {
    const frank = await admin.createUser(`frank-${randomUUID()}@skald.test`, 'correct horse battery');
    const { ws } = await connect(frank, 'web');
    const marker = `[DOWN-${randomUUID()}]`;
    await sim.script({
      match: marker,
      replies: [{ fail: { kind: 'http_error', status: 429, message: 'slow down', retryAfterSeconds: 1 } }],
      repeatLast: true,
    });
    const frames = await turn(ws, `anyone? ${marker}`);
    const failed = frames.find((f) => f.type === 'llm_failed');
    expect((failed?.tried as string[]).sort()).toEqual(['backup', 'primary']);
    expect(String(failed?.last_error)).toContain('429');
    expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'llm_failed' });
    ws.close();
  });
});

/**
 * The shared health store is Redis; the session worker must not need it. A private Redis for the
 * workers only, killed mid-test: turns keep running (and falling back), health goes local and says
 * so, and comes back shared when Redis does.
 */
describe('LLM health when Redis is down', () => {
  let stack: Stack;
  let redis: PrivateRedis;
  let sim: LlmSimAdminClient;
  let user: ApiClient;
  let ws: WsTestClient;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    stack = await Stack.start({
      root: ROOT,
      perApp: { 'session-worker': { REDIS_URL: redis.url, SKALD_LLM_RETRY_TRIES: '1' } },
      llmClients: (simUrl) => [
        { name: 'primary', baseUrl: simUrl, model: 'sim-primary', strength: 'high', priority: 1 },
        { name: 'backup', baseUrl: simUrl, model: 'sim-backup', strength: 'medium', priority: 2 },
      ],
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    user = await admin.createUser(`gina-${randomUUID()}@skald.test`, 'correct horse battery');
    ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: 'web' });
    await ws.waitForType('turn_running');
  });

  afterAll(async () => {
    ws?.close();
    await stack?.stop();
    await redis?.destroy();
  });

  async function turn(content: string): Promise<Frame[]> {
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content });
    await ws.waitFor((f) => (f.type === 'done' || f.type === 'error') && typeof f.seq === 'number', 60_000, from);
    return ws.frames.slice(from);
  }

  it('runs turns without Redis, judges health locally meanwhile, and shares it again once Redis is back', async () => {
    const marker = `[REDIS-${randomUUID()}]`;
    await sim.script({
      match: marker,
      model: 'sim-primary',
      replies: [{ fail: { kind: 'http_error', status: 502, message: 'bad gateway' } }],
      repeatLast: true,
    });
    await sim.script({ match: marker, model: 'sim-backup', replies: [{ content: 'still here' }], repeatLast: true });

    const before = await turn(`one ${marker}`);
    expect(before.find((f) => f.type === 'model_fallback')).toMatchObject({ from: 'primary', to: 'backup' });
    const shared = await user.get<ClientList>('/api/llm/clients');
    expect(shared.body).toMatchObject({ health_scope: 'shared' });
    expect(shared.body.items[0]).toMatchObject({ name: 'primary', consecutive_failures: 1 });

    await redis.kill();
    for (const n of ['two', 'three']) {
      const frames = await turn(`${n} ${marker}`);
      expect(frames.find((f) => f.type === 'model_fallback')).toMatchObject({ from: 'primary', to: 'backup' });
      expect(frames.find((f) => f.type === 'done')).toMatchObject({ content: 'still here' });
    }
    const local = await user.get<ClientList>('/api/llm/clients');
    expect(local.status).toBe(200);
    expect(local.body.health_scope).toBe('local');
    // The worker's own record: all three failures it saw, so the primary is degraded.
    expect(local.body.items[0]).toMatchObject({ name: 'primary', health: 'degraded', consecutive_failures: 3 });

    await redis.start();
    // Redis restarted empty; within the retry interval the worker uses it again.
    let scope = 'local';
    const deadline = Date.now() + 30_000;
    while (scope !== 'shared' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      scope = (await user.get<ClientList>('/api/llm/clients')).body.health_scope;
    }
    expect(scope).toBe('shared');
    expect(stack.findByLog('session-worker', 'LLM health store (Redis) unavailable')).toBeDefined();
    expect(stack.findByLog('session-worker', 'reachable again')).toBeDefined();
  });
});
