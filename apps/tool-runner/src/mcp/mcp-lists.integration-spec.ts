import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { Actor, McpServerDto } from '@skald/contracts';
import { loadConfig } from '@skald/service-kit/config';
import { PrivateNats } from '@skald/testing';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { McpServersRepository } from './mcp-servers.repository';
import { McpService } from './mcp.service';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The user's MCP server list, answered from memory by each tool runner replica: a write on one
 * replica is seen by the next list on another (the doorbell), a lost NATS connection drops every
 * list (a doorbell rung meanwhile is lost), a change nobody announced (SQL) is seen within the age
 * bound, and a user's repeated lists read Postgres once. Two (and a third) runner apps on a private
 * NATS server that the test kills and restarts, on the real database.
 */
describe('MCP server lists across tool runner replicas', () => {
  const log = pino({ level: 'silent' });
  let nats: PrivateNats;
  let base: string;
  let db: DataSource;
  const apps: INestApplication[] = [];
  let a: McpService;
  let b: McpService;
  let bReads: jest.SpyInstance;
  /** Accepts connections and never answers: an MCP server whose connection times out. */
  let silent: Server;
  const held: Socket[] = [];
  const users: string[] = [];

  const boot = async (name: string, cacheSecs: number, env: Record<string, string> = {}) => {
    const config = loadConfig(ToolRunnerConfigSchema, {
      DATABASE_URL: process.env.DATABASE_URL,
      DATABASE_POOL_SIZE: '2',
      NATS_URL: nats.url,
      SKALD_WORKSPACES: join(base, 'workspaces'),
      SKALD_SANDBOX: 'bwrap',
      SKALD_MCP_ALLOW_HOSTS: 'localhost',
      SKALD_MCP_LIST_CACHE_SECS: String(cacheSecs),
      ...env,
    });
    const app = await NestFactory.create(AppModule.register(config, log, `mcp-lists-${name}-${process.pid}`), {
      logger: false,
    });
    await app.init();
    apps.push(app);
    return app;
  };
  const newUser = (): Actor => {
    const userId = randomUUID();
    users.push(userId);
    return { userId, role: 'user' };
  };
  const names = (items: McpServerDto[]) => items.map((s) => s.name);
  /** Lists on `svc` until `ok` holds (at most `withinMs`); the last answer. */
  const until = async (svc: McpService, actor: Actor, ok: (items: McpServerDto[]) => boolean, withinMs: number) => {
    const deadline = Date.now() + withinMs;
    let items = await svc.list(actor);
    while (!ok(items) && Date.now() < deadline) {
      await sleep(25);
      items = await svc.list(actor);
    }
    return items;
  };
  /** A row written behind the runners' backs: no doorbell rings. */
  const writeInSql = (actor: Actor, name: string) =>
    db.query(
      `INSERT INTO mcp_servers (id, user_id, name, transport, command, args, url, network, env_keys, header_keys, secrets)
       VALUES ($1, $2, $3, 'stdio', 'node', '[]'::jsonb, NULL, false, '{}', '{}', NULL)`,
      [randomUUID(), actor.userId, name],
    );

  beforeAll(async () => {
    nats = await PrivateNats.start();
    base = await mkdtemp(join(tmpdir(), 'skald-mcp-lists-'));
    db = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await db.initialize();
    // a bound far longer than any wait below: only a doorbell or a gap explains a fresh answer
    silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
    a = (await boot('a', 300, { SKALD_MCP_CONNECT_TIMEOUT_SECS: '1' })).get(McpService);
    const appB = await boot('b', 300);
    b = appB.get(McpService);
    bReads = jest.spyOn(appB.get(McpServersRepository), 'list');
  }, 60_000);

  afterAll(async () => {
    for (const app of apps) await app.close();
    if (users.length > 0) await db?.query(`DELETE FROM mcp_servers WHERE user_id = ANY($1::uuid[])`, [users]);
    await db?.destroy();
    await nats?.destroy();
    for (const socket of held) socket.destroy();
    silent?.close();
    await rm(base, { recursive: true, force: true });
  });

  it('reads a user’s list once for many lists; a write on replica A is in replica B’s next list', async () => {
    const alice = newUser();
    const bob = newUser();
    const before = bReads.mock.calls.length;
    for (let i = 0; i < 10; i++) expect(await b.list(alice)).toEqual([]);
    await b.list(bob);
    expect(bReads.mock.calls.length - before).toBe(2); // one per user

    await a.create(alice, { name: 'tools', transport: 'stdio', command: 'node', args: ['x.js'] });
    expect(names(await until(b, alice, (l) => l.length === 1, 2000))).toEqual(['tools']);
    expect(names(await a.list(alice))).toEqual(['tools']); // A's own write dropped A's list at once

    await a.delete(alice, 'tools');
    expect(await a.list(alice)).toEqual([]);
    expect(await until(b, alice, (l) => l.length === 0, 2000)).toEqual([]);
    // another user's list was not touched by alice's doorbells
    const reads = bReads.mock.calls.length;
    await b.list(bob);
    expect(bReads.mock.calls.length).toBe(reads);
  });

  it('a status written by A (a server that does not answer) is in B’s next list', async () => {
    const carol = newUser();
    expect(await b.list(carol)).toEqual([]);
    const port = (silent.address() as { port: number }).port;
    // A connects at once (an HTTP server), waits out its 1 s connect timeout, and records the error
    await a.create(carol, { name: 'mute', transport: 'http', url: `http://localhost:${port}/mcp` });
    // registered, then A begins to connect: stopped until then, starting while it tries
    expect(await until(b, carol, (l) => l[0]?.status === 'starting', 2000)).toEqual([
      expect.objectContaining({ name: 'mute', status: 'starting' }),
    ]);
    const listed = await until(b, carol, (l) => l[0]?.status === 'error', 10_000);
    expect(listed).toEqual([expect.objectContaining({ name: 'mute', status: 'error' })]);
  }, 20_000);

  it('a lost NATS connection drops every list: a change whose doorbell never came is seen after the reconnect', async () => {
    const dave = newUser();
    expect(await b.list(dave)).toEqual([]);
    await writeInSql(dave, 'quiet');
    await sleep(200);
    expect(await b.list(dave)).toEqual([]); // kept: nothing said it changed

    await nats.kill();
    await nats.start();
    expect(names(await until(b, dave, (l) => l.length === 1, 15_000))).toEqual(['quiet']);
  }, 30_000);

  it('a change nobody announced is seen once the list is older than the age bound', async () => {
    const c = (await boot('c', 1)).get(McpService);
    const erin = newUser();
    expect(await c.list(erin)).toEqual([]);
    const kept = Date.now();
    await writeInSql(erin, 'quiet');
    expect(await c.list(erin)).toEqual([]);
    const seen = await until(c, erin, (l) => l.length === 1, 3000);
    expect(names(seen)).toEqual(['quiet']);
    expect(Date.now() - kept).toBeGreaterThanOrEqual(900);
  }, 30_000);
});
