import { expect } from '@jest/globals';
import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { Bus, NatsBus } from '@skald/messaging';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { INTERRUPTED_AFTER_START } from '../exec/tool-exec.service';
import { PrivateNats, startPrivateNats } from '../testing-fixtures/private-nats';

jest.setTimeout(60_000);
const log = pino({ level: 'silent' });

async function startRunner(natsUrl: string, base: string, env: Record<string, string> = {}) {
  const config = loadConfig(ToolRunnerConfigSchema, {
    DATABASE_URL: process.env.DATABASE_URL,
    DATABASE_POOL_SIZE: '2',
    NATS_URL: natsUrl,
    SKALD_WORKSPACES: join(base, 'workspaces'),
    ...env,
  });
  const app = await NestFactory.create(AppModule.register(config, log, `tool-runner-feat-${randomUUID()}`), {
    logger: false,
  });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

describe('tool-runner: memory documents, durable results, previews, fail closed', () => {
  let nats: PrivateNats;
  let base: string;
  let runner: { app: INestApplication; url: string };
  let client: Bus;
  let db: DataSource;
  const alice = { userId: randomUUID(), role: 'user' as const };
  const bob = { userId: randomUUID(), role: 'user' as const };
  const admin = { userId: randomUUID(), role: 'admin' as const };

  beforeAll(async () => {
    nats = await startPrivateNats();
    base = await mkdtemp(join(tmpdir(), 'skald-feat-'));
    runner = await startRunner(nats.url, base);
    client = await NatsBus.connect({ servers: nats.url, name: `feat-client-${process.pid}` }, log);
    db = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await db.initialize();
  });
  afterAll(async () => {
    await client?.drain();
    await runner?.app.close();
    await db?.destroy();
    await nats?.stop();
    await rm(base, { recursive: true, force: true });
  });

  const exec = (
    actor: { userId: string; role: 'user' | 'admin' },
    name: string,
    args: Record<string, unknown>,
    toolCallId = randomUUID(),
  ) =>
    client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: toolCallId, name, arguments: args },
      { timeoutMs: 20_000 },
    );

  describe('memory documents', () => {
    it('keeps user-memory per user, in Postgres, never in the workspace', async () => {
      expect(
        await exec(alice, 'write_file', { path: 'user-memory/prefs.md', content: 'Alice likes green tea.\n' }),
      ).toEqual({
        status: 'done',
        result: 'Created user-memory/prefs.md (23 bytes)',
        result_type: 'text',
        file_changed: 'user-memory/prefs.md',
      });
      expect(await exec(alice, 'read_file', { path: 'user-memory/prefs.md' })).toMatchObject({
        status: 'done',
        result: '     1\tAlice likes green tea.',
      });
      // Bob has his own namespace: Alice's document does not exist for him.
      expect(await exec(bob, 'read_file', { path: 'user-memory/prefs.md' })).toEqual({
        status: 'failed',
        error: 'no such memory document: user-memory/prefs.md',
      });
      // Relative to any working directory, and never through it.
      expect(
        await exec(alice, 'edit_file', {
          path: 'user-memory/prefs.md',
          old: 'green',
          new: 'jasmine',
          workdir: '/workspace/sub',
        }),
      ).toMatchObject({ status: 'done', result: 'Replaced 1 occurrence in user-memory/prefs.md (line 1)' });
      expect(
        await exec(alice, 'append_file', { path: 'user-memory/prefs.md', content: 'And dark chocolate.\n' }),
      ).toMatchObject({
        status: 'done',
      });
      expect(
        await exec(alice, 'insert_at_line', {
          path: 'user-memory/prefs.md',
          line: 1,
          content: '# Prefs',
          position: 'before',
        }),
      ).toMatchObject({
        status: 'done',
      });
      expect(
        await exec(alice, 'replace_lines', {
          path: 'user-memory/prefs.md',
          from_line: 3,
          to_line: 3,
          new: 'And milk chocolate.',
        }),
      ).toMatchObject({
        status: 'done',
      });
      const rows: Array<{ content: string }> = await db.query(
        `SELECT content FROM memory_documents WHERE scope = 'user' AND user_id = $1 AND path = 'prefs.md'`,
        [alice.userId],
      );
      expect(rows[0].content).toBe('# Prefs\nAlice likes jasmine tea.\nAnd milk chocolate.\n');
      await expect(readFile(join(base, 'workspaces', alice.userId, 'user-memory', 'prefs.md'))).rejects.toThrow(
        /ENOENT/,
      );
      expect(await exec(alice, 'list_files', { path: 'user-memory' })).toMatchObject({
        status: 'done',
        result: 'Contents of user-memory/:\nprefs.md',
      });
      expect(await exec(alice, 'read_file', { path: 'user-memory/../../etc/passwd' })).toMatchObject({
        status: 'failed',
      });
    });

    it('lets every agent read shared-memory but only an admin write it', async () => {
      expect(await exec(alice, 'write_file', { path: 'shared-memory/policy.md', content: 'x' })).toEqual({
        status: 'failed',
        error: "shared-memory/policy.md is read-only here: shared-memory/ is written only from an admin's session",
      });
      expect(
        await exec(admin, 'write_file', {
          path: 'shared-memory/policy.md',
          content: 'Deployments happen on Tuesdays.\n',
        }),
      ).toMatchObject({ status: 'done' });
      expect(await exec(bob, 'read_file', { path: 'shared-memory/policy.md' })).toMatchObject({
        status: 'done',
        result: '     1\tDeployments happen on Tuesdays.',
      });
      expect(await exec(bob, 'append_file', { path: 'shared-memory/policy.md', content: 'pwned' })).toMatchObject({
        status: 'failed',
      });
    });

    it("memory_search finds the caller's and shared documents, never another user's", async () => {
      await exec(bob, 'write_file', { path: 'user-memory/bob.md', content: 'Bob deploys chocolate factories.\n' });
      const found = await exec(alice, 'memory_search', { query: 'chocolate deployments' });
      expect(found.status).toBe('done');
      const text = found.status === 'done' ? found.result : '';
      expect(text).toContain('user-memory/prefs.md');
      expect(text).toContain('shared-memory/policy.md');
      expect(text).not.toContain('bob.md');
      expect(await exec(alice, 'memory_search', { query: 'zebra' })).toMatchObject({
        status: 'done',
        result: 'No memory documents match "zebra".',
      });
    });

    it("answers tools.memory_turn with the caller's and the shared documents by path and a short context", async () => {
      const r = await client.call('tools.memory_turn', {
        actor: alice,
        paths: ['user-memory/prefs.md', 'user-memory/nope.md', 'notes.txt', 'user-memory/../x'],
        query: 'What tea do I like?',
      });
      expect(r.documents[0].path).toBe('user-memory/prefs.md');
      expect(r.documents[0].content).toContain('jasmine tea');
      expect(r.documents.slice(1)).toEqual([
        { path: 'user-memory/nope.md', content: null },
        { path: 'notes.txt', content: null },
        { path: 'user-memory/../x', content: null },
      ]);
      expect(r.context).toMatch(/^Memory documents that may be relevant/);
      expect(r.context).toContain('user-memory/prefs.md: ');
      expect(r.context).toContain('jasmine tea');
      expect((r.context ?? '').length).toBeLessThanOrEqual(2000);
      // Another user reads neither the document nor a context from it; no query, no context.
      const asBob = { actor: bob, paths: ['user-memory/prefs.md'] };
      expect(await client.call('tools.memory_turn', { ...asBob, query: 'tea' })).toEqual({
        documents: [{ path: 'user-memory/prefs.md', content: null }],
        context: null,
      });
      expect(await client.call('tools.memory_turn', { actor: alice, paths: [], query: null })).toEqual({
        documents: [],
        context: null,
      });
    });
  });

  describe('durable results keyed by tool call id', () => {
    it('answers a duplicate from the record, even on a runner that did not run it', async () => {
      const id = randomUUID();
      const first = await exec(alice, 'append_file', { path: 'log.txt', content: 'once\n' }, id);
      expect(first.status).toBe('done');
      // A second runner (another replica, or this one after a restart) on its own bus.
      const other = await startPrivateNats();
      const second = await startRunner(other.url, base);
      const otherClient = await NatsBus.connect({ servers: other.url, name: `feat-client-2-${process.pid}` }, log);
      try {
        const again = await otherClient.call('tools.exec', {
          actor: alice,
          session_id: randomUUID(),
          tool_call_id: id,
          name: 'append_file',
          arguments: { path: 'log.txt', content: 'once\n' },
        });
        expect(again).toEqual(first);
        expect(await readFile(join(base, 'workspaces', alice.userId, 'log.txt'), 'utf8')).toBe('once\n');
        // The same id for another user is a conflict, not a replay.
        await expect(
          otherClient.call('tools.exec', {
            actor: bob,
            session_id: randomUUID(),
            tool_call_id: id,
            name: 'append_file',
            arguments: { path: 'log.txt', content: 'x' },
          }),
        ).rejects.toMatchObject({ body: { code: 'conflict' } });
      } finally {
        await otherClient.drain();
        await second.app.close();
        await other.stop();
      }
    });

    it('a markInterrupted call abandoned by a dead runner answers interrupted and is not run again', async () => {
      const id = randomUUID();
      await db.query(
        `INSERT INTO tool_call_results (tool_call_id, user_id, session_id, tool_name, status, runner, heartbeat_at)
         VALUES ($1, $2, $3, 'execute_cmd', 'running', 'dead-runner', now() - interval '5 minutes')`,
        [id, alice.userId, randomUUID()],
      );
      expect(await exec(alice, 'execute_cmd', { command: 'echo ran > ran.txt' }, id)).toEqual({
        status: 'failed',
        error: INTERRUPTED_AFTER_START,
      });
      await expect(readFile(join(base, 'workspaces', alice.userId, 'ran.txt'))).rejects.toThrow(/ENOENT/);
      const [row] = await db.query<Array<{ status: string; reply: unknown }>>(
        `SELECT status, reply::jsonb AS reply FROM tool_call_results WHERE tool_call_id = $1`,
        [id],
      );
      expect(row).toEqual({ status: 'failed', reply: { status: 'failed', error: INTERRUPTED_AFTER_START } });
    });

    it('a reExecute call abandoned by a dead runner is taken over and run', async () => {
      const id = randomUUID();
      await db.query(
        `INSERT INTO tool_call_results (tool_call_id, user_id, session_id, tool_name, status, runner, heartbeat_at)
         VALUES ($1, $2, $3, 'write_file', 'running', 'dead-runner', now() - interval '5 minutes')`,
        [id, alice.userId, randomUUID()],
      );
      expect(await exec(alice, 'write_file', { path: 'rerun.txt', content: 'x' }, id)).toMatchObject({
        status: 'done',
      });
      expect(await readFile(join(base, 'workspaces', alice.userId, 'rerun.txt'), 'utf8')).toBe('x');
    });

    it('a duplicate of a call another live runner is running waits for its result', async () => {
      const id = randomUUID();
      await db.query(
        `INSERT INTO tool_call_results (tool_call_id, user_id, session_id, tool_name, status, runner)
         VALUES ($1, $2, $3, 'execute_cmd', 'running', 'live-runner')`,
        [id, alice.userId, randomUUID()],
      );
      const pending = exec(alice, 'execute_cmd', { command: 'echo should-not-run' }, id);
      await new Promise((r) => setTimeout(r, 600));
      const reply = { status: 'done', result: 'from the live runner\n[exit code: 0]', result_type: 'text' };
      await db.query(
        `UPDATE tool_call_results SET status = 'done', reply = $2::jsonb, finished_at = now() WHERE tool_call_id = $1`,
        [id, JSON.stringify(reply)],
      );
      expect(await pending).toEqual(reply);
    });
  });

  describe('tools.preview', () => {
    const preview = (actor: { userId: string; role: 'user' | 'admin' }, name: string, args: Record<string, unknown>) =>
      client.call('tools.preview', {
        actor,
        session_id: randomUUID(),
        tool_call_id: randomUUID(),
        name,
        arguments: args,
      });

    it('computes the diff exactly as the tool will write it, with the hash of the base', async () => {
      const home = join(base, 'workspaces', alice.userId);
      await writeFile(join(home, 'p.txt'), 'one\r\ntwo\r\n');
      const hash = createHash('sha256').update('one\r\ntwo\r\n').digest('hex');
      expect(await preview(alice, 'edit_file', { path: 'p.txt', old: 'two\n', new: 'TWO\n' })).toEqual({
        preview: {
          path: '/workspace/p.txt',
          old_content: 'one\r\ntwo\r\n',
          new_content: 'one\r\nTWO\r\n',
          base_hash: hash,
        },
      });
      expect(await preview(alice, 'append_file', { path: 'p.txt', content: 'three\n' })).toMatchObject({
        preview: { new_content: 'one\r\ntwo\r\nthree\n' },
      });
      expect(
        await preview(alice, 'insert_at_line', { path: 'p.txt', line: 1, content: 'zero', position: 'before' }),
      ).toMatchObject({
        preview: { new_content: 'zero\r\none\r\ntwo\r\n' },
      });
      expect(
        await preview(alice, 'replace_lines', { path: 'p.txt', from_line: 2, to_line: 2, new: 'deux' }),
      ).toMatchObject({
        preview: { new_content: 'one\r\ndeux\r\n' },
      });
      expect(await preview(alice, 'write_file', { path: 'sub/new.txt', content: 'n', workdir: '/workspace' })).toEqual({
        preview: { path: '/workspace/sub/new.txt', new_content: 'n' },
      });
      // Then the tool writes exactly the previewed content.
      await exec(alice, 'edit_file', { path: 'p.txt', old: 'two\n', new: 'TWO\n' });
      expect(await readFile(join(home, 'p.txt'), 'utf8')).toBe('one\r\nTWO\r\n');
    });

    it('previews memory documents and answers null when no preview can be computed', async () => {
      expect(await preview(alice, 'append_file', { path: 'user-memory/prefs.md', content: 'More.\n' })).toMatchObject({
        preview: { path: 'user-memory/prefs.md', new_content: expect.stringMatching(/chocolate\.\nMore\.\n$/) },
      });
      expect(await preview(alice, 'write_file', { path: 'shared-memory/policy.md', content: 'x' })).toEqual({
        preview: null,
      });
      expect(await preview(alice, 'edit_file', { path: 'missing.txt', old: 'a', new: 'b' })).toEqual({ preview: null });
      expect(await preview(alice, 'edit_file', { path: 'p.txt', old: 'absent', new: 'b' })).toEqual({ preview: null });
      expect(await preview(alice, 'read_file', { path: 'p.txt' })).toEqual({ preview: null });
      // Outside the workspace: refused (no human is asked about a write that cannot run).
      expect(await preview(alice, 'write_file', { path: '/etc/passwd', content: 'x' })).toEqual({
        preview: null,
        refused: 'path is outside the workspace (/workspace): /etc/passwd',
      });
      // Another user's file is not the caller's: the preview is of the caller's own (missing) path.
      expect(await preview(bob, 'edit_file', { path: 'p.txt', old: 'one', new: 'x' })).toEqual({ preview: null });
    });
  });

  describe('fail closed', () => {
    it('without a working bubblewrap, execute_cmd is refused with the reason, /readyz says so, files still work', async () => {
      const own = await startPrivateNats();
      const broken = await startRunner(own.url, base, { SKALD_SANDBOX_BWRAP: '/nonexistent/bwrap' });
      const c = await NatsBus.connect({ servers: own.url, name: `feat-client-3-${process.pid}` }, log);
      try {
        const reply = await c.call('tools.exec', {
          actor: alice,
          session_id: randomUUID(),
          tool_call_id: randomUUID(),
          name: 'execute_cmd',
          arguments: { command: 'touch /tmp/skald-should-not-exist' },
        });
        expect(reply).toEqual({
          status: 'failed',
          error: expect.stringMatching(
            /^execute_cmd is unavailable on this tool runner: no working command sandbox: sandbox unavailable: bubblewrap \(\/nonexistent\/bwrap\) is not installed/,
          ),
        });
        const ready = (await (await fetch(`${broken.url}/readyz`)).json()) as { notes: Record<string, string> };
        expect(ready.notes.sandbox).toMatch(/commands are REFUSED until it is fixed/);
        expect(
          await c.call('tools.exec', {
            actor: alice,
            session_id: randomUUID(),
            tool_call_id: randomUUID(),
            name: 'read_file',
            arguments: { path: 'p.txt' },
          }),
        ).toMatchObject({ status: 'done' });
      } finally {
        await c.drain();
        await broken.app.close();
        await own.stop();
      }
    });
  });
});
