import { expect } from '@jest/globals';
import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { ABSENT_FILE_HASH } from '@skald/contracts';
import { Bus, NatsBus } from '@skald/messaging';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { PrivateNats, startPrivateNats } from '../testing-fixtures/private-nats';

jest.setTimeout(60_000);
const log = pino({ level: 'silent' });

/** Stale previews over NATS and Postgres: `tools.preview`'s hash guards the approved `tools.exec`. */
describe('tool-runner: stale previews', () => {
  let nats: PrivateNats;
  let base: string;
  let app: INestApplication;
  let client: Bus;
  let db: DataSource;
  const alice = { userId: randomUUID(), role: 'user' as const };

  beforeAll(async () => {
    nats = await startPrivateNats();
    base = await mkdtemp(join(tmpdir(), 'skald-stale-'));
    const config = loadConfig(ToolRunnerConfigSchema, {
      DATABASE_URL: process.env.DATABASE_URL,
      DATABASE_POOL_SIZE: '2',
      NATS_URL: nats.url,
      SKALD_WORKSPACES: join(base, 'workspaces'),
    });
    app = await NestFactory.create(AppModule.register(config, log, `tool-runner-stale-${randomUUID()}`), {
      logger: false,
    });
    await app.listen(0, '127.0.0.1');
    client = await NatsBus.connect({ servers: nats.url, name: `stale-client-${process.pid}` }, log);
    db = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await db.initialize();
  });
  afterAll(async () => {
    await client?.drain();
    await app?.close();
    await db?.destroy();
    await nats?.stop();
    await rm(base, { recursive: true, force: true });
  });

  const call = (name: string, args: Record<string, unknown>, toolCallId = randomUUID()) => ({
    actor: alice,
    session_id: randomUUID(),
    tool_call_id: toolCallId,
    name,
    arguments: args,
  });
  const hashOf = async (req: ReturnType<typeof call>) => {
    const { preview } = await client.call('tools.preview', req);
    if (!preview) throw new Error('no preview');
    return { hash: preview.base_hash ?? ABSENT_FILE_HASH, newContent: preview.new_content };
  };
  const exec = (req: ReturnType<typeof call>, expected?: string) =>
    client.call('tools.exec', { ...req, ...(expected !== undefined ? { expected_base_hash: expected } : {}) });
  const recordOf = async (id: string) =>
    (
      await db.query<Array<{ status: string }>>(`SELECT status FROM tool_call_results WHERE tool_call_id = $1`, [id])
    )[0];

  it('a workspace file edited after the preview: stale, nothing written, no durable result kept; the re-approved call writes', async () => {
    const home = join(base, 'workspaces', alice.userId);
    await client.call('tools.exec', call('write_file', { path: 'doc.txt', content: 'one\ntwo\n' }));
    const req = call('edit_file', { path: 'doc.txt', old: 'two', new: 'TWO' });
    const first = await hashOf(req);
    await writeFile(join(home, 'doc.txt'), 'one\ntwo\nedited by hand\n');

    expect(await exec(req, first.hash)).toEqual({ status: 'stale', error: expect.stringContaining('changed') });
    expect(await readFile(join(home, 'doc.txt'), 'utf8')).toBe('one\ntwo\nedited by hand\n');
    expect(await recordOf(req.tool_call_id)).toBeUndefined();

    const fresh = await hashOf(req);
    expect(await exec(req, fresh.hash)).toMatchObject({ status: 'done' });
    expect(await readFile(join(home, 'doc.txt'), 'utf8')).toBe(fresh.newContent);
    expect(await recordOf(req.tool_call_id)).toEqual({ status: 'done' });
  });

  it('a memory document changed after the preview: stale under the row lock, then written on a fresh hash', async () => {
    await exec(call('write_file', { path: 'user-memory/plan.md', content: 'step 1\n' }));
    const req = call('append_file', { path: 'user-memory/plan.md', content: 'step 3\n' });
    const first = await hashOf(req);
    await exec(call('append_file', { path: 'user-memory/plan.md', content: 'step 2\n' }));

    expect(await exec(req, first.hash)).toMatchObject({ status: 'stale' });
    const read = async () => (await exec(call('read_file', { path: 'user-memory/plan.md' }))) as { result: string };
    expect((await read()).result).not.toContain('step 3');

    const fresh = await hashOf(req);
    expect(fresh.newContent).toBe('step 1\nstep 2\nstep 3\n');
    expect(await exec(req, fresh.hash)).toMatchObject({ status: 'done' });
    expect((await read()).result).toContain('step 3');
  });

  it('a new memory document: the absent-file hash, stale once another write created it', async () => {
    const req = call('write_file', { path: 'user-memory/new.md', content: 'mine' });
    const { hash } = await hashOf(req);
    expect(hash).toBe(ABSENT_FILE_HASH);
    await exec(call('write_file', { path: 'user-memory/new.md', content: 'theirs' }));
    expect(await exec(req, hash)).toMatchObject({ status: 'stale' });
  });
});
