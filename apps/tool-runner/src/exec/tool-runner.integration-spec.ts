import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { topicOf } from '@skald/contracts';
import { Bus, NatsBus } from '@skald/messaging';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { PrivateNats, startPrivateNats } from '../testing-fixtures/private-nats';

describe('tool-runner over NATS (tools.exec)', () => {
  let base: string;
  let nats: PrivateNats;
  let NATS_URL: string;
  let app: INestApplication;
  let client: Bus;
  let url: string;
  const log = pino({ level: 'silent' });
  const userId = randomUUID();
  const actor = { userId, role: 'user' as const };

  beforeAll(async () => {
    nats = await startPrivateNats();
    NATS_URL = nats.url;
    base = await mkdtemp(join(tmpdir(), 'skald-tr-it-'));
    const config = loadConfig(ToolRunnerConfigSchema, {
      DATABASE_URL: process.env.DATABASE_URL,
      DATABASE_POOL_SIZE: '2',
      NATS_URL,
      SKALD_WORKSPACES: join(base, 'workspaces'),
      SKALD_SANDBOX: 'none',
      SKALD_WORKSPACE_QUOTA: String(1024 * 1024),
      // the test reads /metrics from loopback without the scrape token
      SKALD_METRICS_TRUST_LOOPBACK: 'on',
    });
    app = await NestFactory.create(AppModule.register(config, log, `tool-runner-it-${process.pid}`), { logger: false });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    client = await NatsBus.connect({ servers: NATS_URL, name: `tool-runner-it-client-${process.pid}` }, log);
  });
  afterAll(async () => {
    await client?.drain();
    await app?.close();
    await nats?.stop();
    await rm(base, { recursive: true, force: true });
  });

  const exec = (name: string, args: Record<string, unknown>, toolCallId = randomUUID()) =>
    client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: toolCallId, name, arguments: args },
      { timeoutMs: 10_000 },
    );

  it('writes and reads a file in the caller workspace', async () => {
    const written = await exec('write_file', { path: 'notes/hello.txt', content: 'hello\nworld\n' });
    expect(written).toEqual({
      status: 'done',
      result: 'Created /workspace/notes/hello.txt (12 bytes)',
      result_type: 'text',
      file_changed: '/workspace/notes/hello.txt',
    });
    expect(await readFile(join(base, 'workspaces', userId, 'notes', 'hello.txt'), 'utf8')).toBe('hello\nworld\n');
    expect(await exec('read_file', { path: 'hello.txt', workdir: '/workspace/notes' })).toEqual({
      status: 'done',
      result: '     1\thello\n     2\tworld',
      result_type: 'text',
    });
  });

  it('answers a duplicate tool_call_id with the first result without running it again', async () => {
    const id = randomUUID();
    const args = { path: 'dup.log', content: 'once\n' };
    const [first, concurrent] = await Promise.all([exec('append_file', args, id), exec('append_file', args, id)]);
    const later = await exec('append_file', args, id);
    expect(concurrent).toEqual(first);
    expect(later).toEqual(first);
    expect(await readFile(join(base, 'workspaces', userId, 'dup.log'), 'utf8')).toBe('once\n');
  });

  it('refuses a path outside the workspace with a failed result', async () => {
    expect(await exec('read_file', { path: '/etc/passwd' })).toEqual({
      status: 'failed',
      error: 'path is outside the workspace (/workspace): /etc/passwd',
    });
  });

  it('answers an invalid request with invalid_input', async () => {
    // Bypasses the typed client, which would refuse to send it.
    const raw = await client.nc.request(
      'tools.exec',
      new TextEncoder().encode(
        JSON.stringify({
          actor,
          session_id: randomUUID(),
          tool_call_id: 'not-a-uuid',
          name: 'read_file',
          arguments: {},
        }),
      ),
      { timeout: 5000 },
    );
    const reply: unknown = JSON.parse(new TextDecoder().decode(raw.data));
    expect(reply).toMatchObject({ ok: false, error: { code: 'invalid_input', field: 'tool_call_id' } });
  });

  it('kills a running command on tools.cancel.<id>', async () => {
    const id = randomUUID();
    const pending = exec('execute_cmd', { command: 'sleep 30' }, id);
    await new Promise((r) => setTimeout(r, 300));
    client.publish(topicOf('toolCancel', id), { tool_call_id: id });
    expect(await pending).toEqual({ status: 'cancelled' });
  });

  it('serves /healthz and a /readyz that states the missing sandbox', async () => {
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', service: 'tool-runner' });
    const ready = (await (await fetch(`${url}/readyz`)).json()) as {
      status: string;
      checks: Record<string, string>;
      notes: Record<string, string>;
    };
    expect(ready.status).toBe('ready');
    expect(ready.checks).toEqual({ nats: 'ok', postgres: 'ok', workspaces: 'ok' });
    expect(ready.notes.sandbox).toMatch(/SKALD_SANDBOX=none: execute_cmd runs commands WITHOUT ANY SANDBOX/);
    expect(await (await fetch(`${url}/metrics`)).text()).toMatch(
      /skald_tool_calls_total\{tool="write_file",status="done"/,
    );
  });
});
