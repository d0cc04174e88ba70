import { expect } from '@jest/globals';
import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { connect } from 'nats';
import { DataSource } from 'typeorm';
import { Actor, McpServerDto } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { hostProcessesWith, processesWith } from '../testing-fixtures/host-processes';
import { PrivateNats } from '../testing-fixtures/private-nats';
import { RunnerOverNats, startRunnerOverNats } from '../testing-fixtures/runner-over-nats';
import { McpLauncher } from './mcp-launcher';
import { SecretBox } from '@skald/service-kit';

const FIXTURES = resolve(__dirname, '../testing-fixtures');
const HOSTILE = join(FIXTURES, 'mcp-hostile-server.mjs');
const MAX_MESSAGE = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
jest.setTimeout(60_000);

/**
 * The escape suite for what a tenant controls in a stdio MCP server: its variables (a shared
 * object offered to the dynamic loader must never run on the host), its command's confinement
 * (the command sandbox), and a server that breaks the protocol's size rules on purpose.
 */
describe('stdio MCP servers: the escape suite', () => {
  let nats: PrivateNats;
  let client: Bus;
  let runner: RunnerOverNats;
  let db: DataSource;
  let base: string;
  let markers: string;
  let evil: string;
  const secretsKey = randomBytes(32).toString('base64');
  const alice: Actor = { userId: randomUUID(), role: 'user' };
  const carol: Actor = { userId: randomUUID(), role: 'user' };
  const erin: Actor = { userId: randomUUID(), role: 'user' };
  const dave: Actor = { userId: randomUUID(), role: 'user' };
  const hostTmpMarker = `/tmp/skald-ld-marker-${process.pid}`;

  beforeAll(async () => {
    runner = await startRunnerOverNats('mcp-escape', {
      SKALD_SANDBOX: 'bwrap',
      SKALD_SANDBOX_RO_BINDS: FIXTURES,
      SKALD_SECRETS_KEY: secretsKey,
      SKALD_MCP_MAX_MESSAGE_BYTES: String(MAX_MESSAGE),
      SKALD_MCP_MAX_TOOL_PAGES: '5',
      SKALD_MCP_MAX_TOOLS: '50',
      SKALD_MCP_MAX_SCHEMA_BYTES: String(64 * 1024),
      SKALD_MCP_MAX_RUNNING_PER_USER: '3',
      SKALD_MCP_NETWORK: 'off',
      SKALD_WORKSPACE_QUOTA: String(8 * 1024 ** 2),
      SKALD_WORKSPACE_SAMPLE_MS: '50',
    });
    ({ nats, client, base } = runner);
    markers = join(base, 'markers');
    await mkdir(markers);
    db = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await db.initialize();

    // A shared object whose constructor leaves a marker wherever it runs, in alice's workspace.
    const ws = join(base, 'workspaces', alice.userId);
    await mkdir(ws, { recursive: true });
    const src = join(base, 'evil.c');
    await writeFile(
      src,
      `#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void evil(void) {
  char p[4096];
  snprintf(p, sizeof p, "${markers}/ran-in-%d", (int)getpid());
  FILE *f = fopen(p, "w"); if (f) fclose(f);
  f = fopen("${hostTmpMarker}", "w"); if (f) fclose(f);
}
`,
    );
    evil = join(ws, 'evil.so');
    execFileSync('gcc', ['-shared', '-fPIC', '-o', evil, src]);
    // The same object under a library name bwrap loads, for LD_LIBRARY_PATH.
    const libDir = join(ws, 'lib');
    await mkdir(libDir);
    for (const name of ['libselinux.so.1', 'libcap.so.2']) execFileSync('cp', [evil, join(libDir, name)]);
    // It works: preloaded into a host program, it leaves its marker (so no marker below means it never ran).
    execFileSync('/bin/true', { env: { LD_PRELOAD: evil } });
    expect((await readdir(markers)).length).toBe(1);
    await rm(markers, { recursive: true, force: true });
    await rm(hostTmpMarker, { force: true });
    await mkdir(markers);
  }, 60_000);

  afterEach(async () => {
    // Wherever a test went, the shared object never ran on the host.
    expect(await readdir(markers)).toEqual([]);
    expect(existsSync(hostTmpMarker)).toBe(false);
  });

  afterAll(async () => {
    await db?.destroy();
    await runner?.stop();
    await rm(hostTmpMarker, { force: true });
  });

  const create = (actor: Actor, server: Record<string, unknown>) =>
    client.call('mcp.servers.create', { actor, server: server as never }, { timeoutMs: 20_000 });
  const list = async (actor: Actor) => (await client.call('mcp.servers.list', { actor })).items;
  const exec = (actor: Actor, name: string, args: Record<string, unknown>) =>
    client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: randomUUID(), name, arguments: args },
      { timeoutMs: 60_000 },
    );
  const settledStatus = async (actor: Actor, name: string): Promise<McpServerDto> => {
    for (let i = 0; i < 300; i++) {
      const s = (await list(actor)).find((x) => x.name === name);
      if (s && s.status !== 'starting' && s.status !== 'stopped') return s;
      await sleep(100);
    }
    throw new Error(`${name} never started`);
  };
  /** Registers a hostile server and starts it the only way there is: a call of its start tool (approved). */
  const hostile = async (actor: Actor, name: string, mode: string, more: Record<string, unknown> = {}) => {
    await create(actor, { name, transport: 'stdio', command: 'node', args: [HOSTILE, mode], ...more });
    return exec(actor, `mcp__${name}__skald_start`, {});
  };
  const catalog = (actor: Actor, granted: string[]) =>
    client.call('mcp.catalog', { actor, session_id: randomUUID(), granted }, { timeoutMs: 60_000 });

  it('registering a stdio server runs nothing: no process, no status change; the catalog offers only its start tool', async () => {
    const token = `reg${randomUUID().replaceAll('-', '')}`;
    const frank: Actor = { userId: randomUUID(), role: 'user' };
    await create(frank, { name: 'idle', transport: 'stdio', command: 'node', args: [HOSTILE, 'probe', token] });
    const granted = await catalog(frank, ['idle']);
    await sleep(1000);
    expect(processesWith(token)).toEqual([]);
    expect(runner.app.get(McpLauncher).runningCount).toBe(0);
    expect((await list(frank))[0]).toMatchObject({ name: 'idle', status: 'stopped', tools_count: 0 });
    expect(granted.tools.map((t) => t.name)).toEqual(['mcp__idle__skald_start']);
    // The approved call starts it, confined, and its tools are offered from then on without starting it again.
    const started = await exec(frank, 'mcp__idle__skald_start', {});
    expect(started).toMatchObject({
      status: 'done',
      result: expect.stringMatching(/^MCP server idle is running with 3 tools: /),
    });
    expect(processesWith(token).length).toBeGreaterThan(0);
    expect(hostProcessesWith(token)).toEqual([]);
    expect((await catalog(frank, ['idle'])).tools.map((t) => t.name).sort()).toEqual([
      'mcp__idle__fill',
      'mcp__idle__huge',
      'mcp__idle__probe',
    ]);
  });

  it('a server writing files is killed at the workspace quota, like a command, and does not start again while full', async () => {
    const gina: Actor = { userId: randomUUID(), role: 'user' };
    expect(await hostile(gina, 'filler', 'probe')).toMatchObject({ status: 'done' });
    const reply = await exec(gina, 'mcp__filler__fill', { files: 400 });
    expect(reply).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/workspace quota exceeded: .*; the MCP server was stopped/),
    });
    const ws = join(base, 'workspaces', gina.userId);
    let bytes = 0;
    for (const f of await readdir(ws)) bytes += (await stat(join(ws, f))).size;
    // Stopped within about one sampling interval past the 8 MiB quota (the loop writes ~50 MiB/s).
    expect(bytes).toBeGreaterThan(8 * 1024 ** 2);
    expect(bytes).toBeLessThan(24 * 1024 ** 2);
    for (let i = 0; i < 50 && runner.app.get(McpLauncher).runningCount > 0; i++) await sleep(100);
    const again = await exec(gina, 'mcp__filler__skald_start', {});
    expect(again).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/workspace quota exceeded: .*the MCP server was not started/),
    });
    // Another tenant's server is unaffected.
    const hal: Actor = { userId: randomUUID(), role: 'user' };
    expect(await hostile(hal, 'fine', 'probe')).toMatchObject({ status: 'done' });
  });

  it.each([
    ['LD_PRELOAD', () => evil],
    ['LD_AUDIT', () => evil],
    ['LD_LIBRARY_PATH', () => join(base, 'workspaces', alice.userId, 'lib')],
    ['ld_preload', () => evil],
    ['GCONV_PATH', () => join(base, 'workspaces', alice.userId)],
    ['GLIBC_TUNABLES', () => 'glibc.malloc.check=3'],
    ['NODE_OPTIONS', () => `--require ${evil}`],
    ['BASH_ENV', () => evil],
    ['PYTHONPATH', () => '/workspace'],
    ['PATH', () => '/workspace'],
  ])(
    'refuses a server configured with %s, naming the variable (the runner checks what the gateway checks)',
    async (name, value) => {
      // Sent raw, past the client's own schema check: the runner's edge refuses it too.
      const nc = await connect({ servers: nats.url });
      try {
        const server = {
          name: 'v',
          transport: 'stdio',
          command: 'node',
          args: [HOSTILE, 'probe'],
          env: { [name]: value() },
        };
        const raw = await nc.request('mcp.servers.create', JSON.stringify({ actor: alice, server }), {
          timeout: 10_000,
        });
        expect(JSON.parse(raw.string())).toMatchObject({
          ok: false,
          error: { code: 'invalid_input', field: `server.env.${name}`, message: expect.stringContaining(name) },
        });
      } finally {
        await nc.close();
      }
      expect((await list(alice)).map((s) => s.name)).not.toContain('v');
    },
  );

  it('a stored configuration with LD_PRELOAD (written around the checks) is never started', async () => {
    const sealed = SecretBox.fromConfig(secretsKey)!.seal(
      JSON.stringify({ env: { LD_PRELOAD: evil, LD_AUDIT: evil }, headers: {} }),
      alice.userId,
    );
    await db.query(
      `INSERT INTO mcp_servers (id, user_id, name, transport, command, args, url, network, env_keys, header_keys, secrets)
       VALUES ($1, $2, 'legacy', 'stdio', 'node', $3::jsonb, NULL, false, $4, '{}', $5)`,
      [randomUUID(), alice.userId, JSON.stringify([HOSTILE, 'probe']), ['LD_AUDIT', 'LD_PRELOAD'], sealed],
    );
    const reply = await exec(alice, 'mcp__legacy__probe', {});
    expect(reply).toMatchObject({ status: 'failed', error: expect.stringMatching(/LD_PRELOAD is refused/) });
    expect(hostProcessesWith(evil)).toEqual([]);
  });

  it("runs confined like a command: uid 1000, no network, its variables inside only, none on the host's side", async () => {
    const token = `tok${randomUUID().replaceAll('-', '')}`;
    await hostile(alice, 'probe', 'probe', { env: { PROBE_TOKEN: token }, network: true });
    expect((await settledStatus(alice, 'probe')).status).toBe('ready');
    const reply = await exec(alice, 'mcp__probe__probe', {});
    expect(reply.status).toBe('done');
    const seen = JSON.parse((reply as { result: string }).result) as {
      uid: number;
      env: Record<string, string>;
      net: string;
      seccomp: string;
    };
    expect(seen.uid).toBe(1000);
    expect(seen.seccomp).toBe('2'); // the command sandbox's syscall filter
    expect(seen.env.PROBE_TOKEN).toBe(token);
    expect(seen.env.HOME).toBe('/mcp-home');
    for (const leaked of ['DATABASE_URL', 'NATS_URL', 'SKALD_SECRETS_KEY']) expect(seen.env[leaked]).toBeUndefined();
    // network: true, but the operator has not allowed it (SKALD_MCP_NETWORK=off): loopback only.
    expect(seen.net.trim()).toBe('lo');
    // The server is running now: no process on the host's side has its variable, argv or cwd.
    expect(hostProcessesWith(token)).toEqual([]);
    expect(hostProcessesWith(HOSTILE)).toEqual([]);
  });

  it("a server's HOME is its own: the model's dotfiles in /workspace are not read there, and no command sees it", async () => {
    const cmd = async (command: string): Promise<string> => {
      const r = await exec(dave, 'execute_cmd', { command });
      expect(r.status).toBe('done');
      return (r as { result: string }).result;
    };
    // What a prompt-injected model plants where a HOME of /workspace would pick it up.
    await cmd(
      'printf "registry=http://evil.invalid/\\nnode-options=--require /workspace/evil.js\\n" > /workspace/.npmrc; ' +
        'echo "touch /workspace/PWNED" > /workspace/.bashrc; cp /workspace/.bashrc /workspace/.profile; ' +
        'mkdir -p /workspace/.config/git && echo "[core] fsmonitor = touch /workspace/PWNED" > /workspace/.config/git/config',
    );
    const token = `tok${randomUUID().replaceAll('-', '')}`;
    await hostile(dave, 'homeprobe', 'probe', { env: { PROBE_TOKEN: token } });
    expect((await settledStatus(dave, 'homeprobe')).status).toBe('ready');
    const reply = await exec(dave, 'mcp__homeprobe__probe', {});
    expect(reply.status).toBe('done');
    const seen = JSON.parse((reply as { result: string }).result) as {
      env: Record<string, string>;
      cwd: string;
      home: string;
      npmrc: string;
    };
    expect(seen.env.HOME).toBe('/mcp-home');
    expect(seen.cwd).toBe('/mcp-home');
    // Empty at start: none of the planted dotfiles; the server could keep a file there.
    expect(seen.home).toBe('wrote-kept');
    expect(seen.npmrc).not.toContain('evil');
    // The server's HOME is neither in the workspace nor anywhere a command can see or write.
    const ws = join(base, 'workspaces', dave.userId);
    expect(existsSync(join(ws, '.server-kept'))).toBe(false);
    const fromCmd = await cmd(
      'ls -A /mcp-home 2>&1; cat /mcp-home/.server-kept 2>&1; echo x > /mcp-home/.npmrc 2>&1; echo "[$HOME]"; true',
    );
    expect(fromCmd).not.toContain('keep');
    expect(fromCmd).toMatch(/No such file or directory|Read-only file system/);
    expect(fromCmd).toContain('[/workspace]');
    expect(existsSync(join(ws, 'PWNED'))).toBe(false);
  });

  it('an endless or repeating nextCursor ends at the page bound', async () => {
    await hostile(erin, 'endless', 'endless-cursor');
    await hostile(erin, 'samecursor', 'same-cursor');
    expect(await settledStatus(erin, 'endless')).toMatchObject({ status: 'ready', tools_count: 5 });
    expect(await settledStatus(erin, 'samecursor')).toMatchObject({ status: 'ready', tools_count: 2 });
  });

  it('keeps at most SKALD_MCP_MAX_TOOLS tools, leaves out a tool with a huge schema', async () => {
    await hostile(carol, 'many', 'many-tools');
    expect(await settledStatus(carol, 'many')).toMatchObject({ status: 'ready', tools_count: 50 });
    await hostile(carol, 'schema', 'huge-schema');
    expect(await settledStatus(carol, 'schema')).toMatchObject({ status: 'ready', tools_count: 1 });
  });

  it('a 1 GB result is cut while read: the call fails with the reason, the runner never holds it', async () => {
    await hostile(carol, 'huge', 'probe');
    expect((await settledStatus(carol, 'huge')).status).toBe('ready');
    const before = process.memoryUsage().rss;
    const started = Date.now();
    const reply = await exec(carol, 'mcp__huge__huge', {});
    expect(reply).toEqual({
      status: 'failed',
      error: expect.stringContaining(`the MCP server sent a message of more than ${MAX_MESSAGE} bytes; it was stopped`),
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 ** 2);
    // The next use starts it again.
    expect((await exec(carol, 'mcp__huge__probe', {})).status).toBe('done');
  });

  it('runs at most SKALD_MCP_MAX_RUNNING_PER_USER servers of one user at once', async () => {
    const dave: Actor = { userId: randomUUID(), role: 'user' };
    for (const n of ['a', 'b', 'c']) await hostile(dave, n, 'probe');
    for (const n of ['a', 'b', 'c']) expect((await settledStatus(dave, n)).status).toBe('ready');
    await hostile(dave, 'd', 'probe');
    expect(await settledStatus(dave, 'd')).toMatchObject({
      status: 'error',
      error: expect.stringContaining('at most 3 of your stdio MCP servers run at once'),
    });
    // Another user is unaffected.
    await hostile(alice, 'other', 'probe');
    expect((await settledStatus(alice, 'other')).status).toBe('ready');
  });
});

describe('stdio MCP servers: lifetime and the runner-wide cap', () => {
  let app: INestApplication;
  let client: Bus;
  let runner: RunnerOverNats;

  beforeAll(async () => {
    runner = await startRunnerOverNats('mcp-life', {
      SKALD_SANDBOX: 'bwrap',
      SKALD_SANDBOX_RO_BINDS: FIXTURES,
      SKALD_MCP_LIFETIME_SECS: '2',
      SKALD_MCP_MAX_RUNNING: '2',
    });
    ({ app, client } = runner);
  }, 60_000);

  afterAll(async () => {
    await runner?.stop();
  });

  const probe = async (actor: Actor, name: string) => {
    await client.call(
      'mcp.servers.create',
      { actor, server: { name, transport: 'stdio', command: 'node', args: [HOSTILE, 'probe'] } },
      { timeoutMs: 20_000 },
    );
    // Started by an (approved) call of its start tool: registering it runs nothing.
    return client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: randomUUID(), name: `mcp__${name}__skald_start`, arguments: {} },
      { timeoutMs: 30_000 },
    );
  };
  const status = async (actor: Actor, name: string) => {
    for (let i = 0; i < 300; i++) {
      const s = (await client.call('mcp.servers.list', { actor })).items.find((x) => x.name === name);
      if (s && s.status !== 'starting' && s.status !== 'stopped') return s;
      await sleep(100);
    }
    throw new Error(`${name} never started`);
  };
  const running = () => app.get(McpLauncher).runningCount;

  it('runs at most SKALD_MCP_MAX_RUNNING servers on the runner, all users together', async () => {
    const users: Actor[] = [1, 2, 3].map(() => ({ userId: randomUUID(), role: 'user' as const }));
    // Three users' servers start at once: the runner-wide cap of 2 refuses exactly one.
    await Promise.all(users.map((u, i) => probe(u, `s${i}`)));
    const seen = await Promise.all(users.map((u, i) => status(u, `s${i}`)));
    expect(seen.map((s) => s.status).sort()).toEqual(['error', 'ready', 'ready']);
    expect(seen.find((s) => s.status === 'error')?.error).toContain('runs as many stdio MCP servers as it may');
  });

  it('a server lives at most SKALD_MCP_LIFETIME_SECS, busy or not; the next use starts it again', async () => {
    for (let i = 0; i < 50 && running() > 0; i++) await sleep(100);
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    await probe(actor, 'short');
    expect((await status(actor, 'short')).status).toBe('ready');
    expect(running()).toBe(1);
    for (let i = 0; i < 50 && running() > 0; i++) await sleep(100);
    expect(running()).toBe(0);
    const again = await client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: randomUUID(), name: 'mcp__short__probe', arguments: {} },
      { timeoutMs: 30_000 },
    );
    expect(again.status).toBe('done');
  });
});
