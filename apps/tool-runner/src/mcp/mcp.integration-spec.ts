import { expect } from '@jest/globals';
import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { Actor, MCP_TRANSPORT_FIELDS, MCP_TRANSPORTS, McpServerDto, McpServerInput, topicOf } from '@skald/contracts';
import { Bus, NatsBus } from '@skald/messaging';
import { RemoteError } from '@skald/messaging/bus-errors';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { McpLauncher } from './mcp-launcher';
import { PrivateNats, startPrivateNats } from '../testing-fixtures/private-nats';

const ROOT = resolve(__dirname, '../../../..');
const MODULES = join(ROOT, 'node_modules');
const FIXTURES = resolve(__dirname, '../testing-fixtures');
const EVERYTHING = join(MODULES, '@modelcontextprotocol/server-everything/dist/index.js');
const FILESYSTEM = join(MODULES, '@modelcontextprotocol/server-filesystem/dist/index.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof RemoteError) return `${e.body.code}${e.body.field ? `:${e.body.field}` : ''}`;
    throw e;
  }
}

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/**
 * MCP against real servers from the npm registry: server-everything over stdio (in the bubblewrap
 * sandbox) and over streamable HTTP, server-filesystem over stdio, and a small SDK server that
 * changes its tool list at run time.
 */
describe('MCP servers through the tool runner', () => {
  const log = pino({ level: 'silent' });
  let nats: PrivateNats;
  let app: INestApplication;
  let client: Bus;
  let db: DataSource;
  let base: string;
  let http: ChildProcess | undefined;
  let httpPort = 0;
  const secretsKey = randomBytes(32).toString('base64');
  const alice: Actor = { userId: randomUUID(), role: 'user' };
  const bob: Actor = { userId: randomUUID(), role: 'user' };
  const TOKEN = `tok-${randomBytes(8).toString('hex')}`;

  beforeAll(async () => {
    nats = await startPrivateNats();
    base = await mkdtemp(join(tmpdir(), 'skald-mcp-it-'));
    httpPort = await freePort();
    http = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { PATH: process.env.PATH, PORT: String(httpPort) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    await new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error('server-everything (HTTP) did not start')), 20_000);
      http!.stderr!.on('data', (d: Buffer) => {
        if (d.toString().includes('listening')) {
          clearTimeout(timer);
          ok();
        }
      });
    });
    const config = loadConfig(ToolRunnerConfigSchema, {
      DATABASE_URL: process.env.DATABASE_URL,
      DATABASE_POOL_SIZE: '3',
      NATS_URL: nats.url,
      SKALD_WORKSPACES: join(base, 'workspaces'),
      SKALD_SANDBOX: 'bwrap',
      SKALD_SANDBOX_RO_BINDS: `${MODULES},${FIXTURES}`,
      SKALD_SECRETS_KEY: secretsKey,
      // a host name the operator trusts although it is loopback; 127.0.0.1 itself is not allowed
      SKALD_MCP_ALLOW_HOSTS: 'localhost',
    });
    app = await NestFactory.create(AppModule.register(config, log, `mcp-it-${process.pid}`), { logger: false });
    await app.init();
    client = await NatsBus.connect({ servers: nats.url, name: `mcp-it-client-${process.pid}` }, log);
    db = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await db.initialize();
  }, 60_000);

  afterAll(async () => {
    await client?.drain();
    await app?.close();
    await db?.destroy();
    http?.kill();
    await nats?.stop();
    await rm(base, { recursive: true, force: true });
  });

  const create = (actor: Actor, server: Record<string, unknown>) =>
    client.call('mcp.servers.create', { actor, server: server as never }, { timeoutMs: 20_000 });
  const list = async (actor: Actor) => (await client.call('mcp.servers.list', { actor })).items;
  const catalog = (actor: Actor, granted: string[]) =>
    client.call('mcp.catalog', { actor, session_id: randomUUID(), granted }, { timeoutMs: 60_000 });
  const exec = (actor: Actor, name: string, args: Record<string, unknown>, toolCallId = randomUUID()) =>
    client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: toolCallId, name, arguments: args },
      { timeoutMs: 60_000 },
    );
  const until = async (actor: Actor, name: string, status: McpServerDto['status']) => {
    for (let i = 0; i < 300; i++) {
      const s = (await list(actor)).find((x) => x.name === name);
      if (s?.status === status) return s;
      await sleep(100);
    }
    throw new Error(`${name} never became ${status}: ${JSON.stringify(await list(actor))}`);
  };

  it('runs a stdio server in its own sandbox, with only its own variables; credentials are write-only', async () => {
    const dto = await create(alice, {
      name: 'everything',
      transport: 'stdio',
      command: 'node',
      args: [EVERYTHING, 'stdio'],
      env: { EVERYTHING_TOKEN: TOKEN },
    });
    expect(dto).toMatchObject({ name: 'everything', transport: 'stdio', env_keys: ['EVERYTHING_TOKEN'] });
    expect(JSON.stringify(dto)).not.toContain(TOKEN);
    // Registered, it runs nothing: granted, it offers only the tool that starts it.
    expect((await catalog(alice, ['everything'])).tools.map((t) => t.name)).toEqual(['mcp__everything__skald_start']);
    expect(app.get(McpLauncher).runningCount).toBe(0);
    expect(await exec(alice, 'mcp__everything__skald_start', {})).toMatchObject({
      status: 'done',
      result: expect.stringMatching(/^MCP server everything is running with \d+ tools: .*get-sum/),
    });
    const ready = await until(alice, 'everything', 'ready');
    expect(ready.tools_count).toBeGreaterThan(5);
    expect(JSON.stringify(await list(alice))).not.toContain(TOKEN);
    // sealed at rest
    const [row] = await db.query<Array<{ secrets: string }>>(
      `SELECT secrets FROM mcp_servers WHERE user_id = $1 AND name = 'everything'`,
      [alice.userId],
    );
    expect(row.secrets).toMatch(/^v1\./);
    expect(row.secrets).not.toContain(TOKEN);

    const c = await catalog(alice, ['everything']);
    expect(c.groups).toEqual(['everything']);
    const names = c.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-sum']));
    expect(c.tools.find((t) => t.name === 'mcp__everything__get-env')).toMatchObject({ read_only: true });

    expect(await exec(alice, 'mcp__everything__get-sum', { a: 2, b: 40 })).toMatchObject({
      status: 'done',
      result: expect.stringContaining('42'),
    });
    const envReply = await exec(alice, 'mcp__everything__get-env', {});
    expect(envReply.status).toBe('done');
    const env = JSON.parse((envReply as { result: string }).result) as Record<string, string>;
    expect(env.EVERYTHING_TOKEN).toBe(TOKEN);
    expect(env.HOME).toBe('/mcp-home'); // its own, not the workspace the model's commands write
    for (const leaked of ['DATABASE_URL', 'NATS_URL', 'SKALD_SECRETS_KEY', 'SKALD_WORKSPACES'])
      expect(env[leaked]).toBeUndefined();
    expect(JSON.stringify(env)).not.toContain(secretsKey);
  }, 90_000);

  it('another user sees none of it and cannot call it', async () => {
    expect(await list(bob)).toEqual([]);
    expect(await catalog(bob, ['everything'])).toEqual({ groups: [], tools: [], unavailable_builtins: ['web_search'] });
    expect(await exec(bob, 'mcp__everything__get-sum', { a: 1, b: 1 })).toEqual({
      status: 'failed',
      error: 'mcp__everything__get-sum: no enabled MCP server of yours provides this tool',
    });
    expect(await codeOf(client.call('mcp.servers.delete', { actor: bob, name: 'everything' }))).toBe('not_found');
  });

  it('a stop cancels an MCP call in flight', async () => {
    const id = randomUUID();
    const started = Date.now();
    const running = exec(alice, 'mcp__everything__trigger-long-running-operation', { duration: 30, steps: 30 }, id);
    await sleep(1500);
    client.publish(topicOf('toolCancel', id), { tool_call_id: id });
    expect(await running).toEqual({ status: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(20_000);
    // the connection survives a cancelled call
    expect(await exec(alice, 'mcp__everything__echo', { message: 'still here' })).toMatchObject({
      status: 'done',
      result: expect.stringContaining('still here'),
    });
  }, 60_000);

  it('server-filesystem works on the user workspace and nothing else', async () => {
    await create(alice, { name: 'fs', transport: 'stdio', command: 'node', args: [FILESYSTEM, '/workspace'] });
    // A call of one of its tools starts it too (it passed the approval gate like the start tool).
    expect(
      await exec(alice, 'mcp__fs__write_file', { path: '/workspace/from-mcp.txt', content: 'via MCP' }),
    ).toMatchObject({
      status: 'done',
    });
    expect(await readFile(join(base, 'workspaces', alice.userId, 'from-mcp.txt'), 'utf8')).toBe('via MCP');
    // the host's files are not in the sandbox, whatever the server allows
    const outside = await exec(alice, 'mcp__fs__read_text_file', {
      path: `${base}/workspaces/${alice.userId}/from-mcp.txt`,
    });
    expect(outside.status).toBe('failed');
  }, 90_000);

  it('refreshes the tool list on list_changed', async () => {
    await create(alice, {
      name: 'grower',
      transport: 'stdio',
      command: 'node',
      args: [join(FIXTURES, 'mcp-list-changed-server.mjs')],
      network: false,
    });
    await exec(alice, 'mcp__grower__skald_start', {});
    await until(alice, 'grower', 'ready');
    const before = (await catalog(alice, ['grower'])).tools.map((t) => t.name);
    expect(before.sort()).toEqual(['mcp__grower__grow', 'mcp__grower__whoami']);
    const who = await exec(alice, 'mcp__grower__whoami', {});
    expect(JSON.parse((who as { result: string }).result)).toMatchObject({
      hostname: 'sandbox',
      uid: 1000,
      cwd: '/mcp-home',
    });
    expect(await exec(alice, 'mcp__grower__grow', {})).toMatchObject({ status: 'done', result: 'now 1 added' });
    let after: string[] = [];
    for (let i = 0; i < 50 && !after.includes('mcp__grower__added_1'); i++) {
      after = (await catalog(alice, ['grower'])).tools.map((t) => t.name);
      if (!after.includes('mcp__grower__added_1')) await sleep(100);
    }
    expect(after).toContain('mcp__grower__added_1');
    expect(await exec(alice, 'mcp__grower__added_1', { x: 'hi' })).toMatchObject({ result: 'added_1 got hi' });
  }, 90_000);

  it('streamable HTTP: loopback refused unless allow-listed by name; headers are write-only', async () => {
    expect(
      await codeOf(create(alice, { name: 'web', transport: 'http', url: `http://127.0.0.1:${httpPort}/mcp` })),
    ).toBe('invalid_input:url');
    expect(
      await codeOf(create(alice, { name: 'meta', transport: 'http', url: 'http://169.254.169.254/latest/meta-data' })),
    ).toBe('invalid_input:url');
    expect(await codeOf(create(alice, { name: 'web', transport: 'http', url: `http://[::1]:${httpPort}/mcp` }))).toBe(
      'invalid_input:url',
    );
    const dto = await create(alice, {
      name: 'web',
      transport: 'http',
      url: `http://localhost:${httpPort}/mcp`,
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(dto).toMatchObject({ transport: 'http', header_keys: ['Authorization'] });
    expect(JSON.stringify(dto)).not.toContain(TOKEN);
    await until(alice, 'web', 'ready');
    expect(await exec(alice, 'mcp__web__get-sum', { a: 20, b: 22 })).toMatchObject({
      status: 'done',
      result: expect.stringContaining('42'),
    });
  }, 90_000);

  it('a taken name conflicts; a server that cannot start shows its error; deleting a server ends its tools', async () => {
    expect(await codeOf(create(alice, { name: 'fs', transport: 'stdio', command: 'node' }))).toBe('conflict:name');
    await create(alice, { name: 'broken', transport: 'stdio', command: 'definitely-not-installed' });
    expect(await exec(alice, 'mcp__broken__skald_start', {})).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('MCP server broken is not available'),
    });
    const broken = await until(alice, 'broken', 'error');
    expect(broken.error).toBeTruthy();

    await client.call('mcp.servers.delete', { actor: alice, name: 'everything' });
    expect((await list(alice)).map((s) => s.name)).not.toContain('everything');
    expect(await exec(alice, 'mcp__everything__get-sum', { a: 1, b: 1 })).toMatchObject({ status: 'failed' });
    expect((await catalog(alice, ['everything'])).tools).toEqual([]);
  }, 60_000);

  it('shows every configuration field as created and as patched, credentials by key (none is dropped)', async () => {
    type Fields = Required<Omit<McpServerInput, 'name' | 'transport'>>;
    // One pair of values per field of every transport: a field added to McpServerInput does not compile here.
    const samples: { [F in keyof Fields]: [Fields[F], Fields[F]] } = {
      command: ['node', 'python3'],
      args: [['--one'], ['--two', 'three']],
      env: [{ ONE_TOKEN: 'value-one' }, { TWO_TOKEN: 'value-two', THREE: 'value-three' }],
      network: [true, false],
      url: [`http://localhost:${httpPort}/one`, `http://localhost:${httpPort}/two`],
      headers: [{ 'X-One': 'value-one' }, { 'X-Two': 'value-two' }],
    };
    /** Where the list shows a field: credentials only by their names. */
    const credentials: Partial<Record<keyof Fields, string>> = { env: 'env_keys', headers: 'header_keys' };
    const shown = (field: keyof Fields, value: unknown): [string, unknown] => {
      const keys = credentials[field];
      return keys ? [keys, Object.keys(value as object).sort()] : [field, value];
    };
    const read = async (name: string) =>
      (await list(bob)).find((s) => s.name === name) as unknown as Record<string, unknown>;
    for (const transport of MCP_TRANSPORTS) {
      const name = `round-trip-${transport}`;
      const fields = MCP_TRANSPORT_FIELDS[transport];
      await create(bob, { name, transport, ...Object.fromEntries(fields.map((f) => [f, samples[f][0]])) });
      const created = await read(name);
      for (const f of fields) {
        const [key, value] = shown(f, samples[f][0]);

        expect({ transport, field: f, shows: created[key] }).toEqual({ transport, field: f, shows: value });
      }
      for (const f of fields) {
        await client.call('mcp.servers.update', { actor: bob, name, patch: { [f]: samples[f][1] } });
        const [key, value] = shown(f, samples[f][1]);

        expect({ transport, field: f, shows: (await read(name))[key] }).toEqual({ transport, field: f, shows: value });
      }
      await client.call('mcp.servers.delete', { actor: bob, name });
    }
  }, 60_000);
});
