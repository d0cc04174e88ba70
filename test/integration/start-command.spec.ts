import { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { connect } from 'nats';
import { freePort } from '@skald/testing';

const ROOT = path.resolve(__dirname, '../..');

interface LocalAuth {
  natsBinary(env: NodeJS.ProcessEnv): string | null;
  startLocalNats(o: {
    bin: string;
    port: number;
    state: string;
    onLine: (l: string) => void;
  }): Promise<{ child: ChildProcess; url: string; env: Record<string, { NATS_USER: string; NATS_PASSWORD: string }> }>;
  provisionRedisUsers(o: {
    adminUrl: string;
    state: string;
    env: NodeJS.ProcessEnv;
    instance: string;
  }): Promise<Record<string, Record<string, string>>>;
}

describe("the start command's per-app credentials (scripts/lib-local-auth.js)", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const auth = require(path.join(ROOT, 'scripts/lib-local-auth.js')) as LocalAuth;
  const state = mkdtempSync(path.join(tmpdir(), 'skald-start-'));
  afterAll(() => rmSync(state, { recursive: true, force: true }));

  it('runs a NATS server whose users are the apps, each with only its subjects', async () => {
    const bin = auth.natsBinary(process.env);
    expect(bin).toBeTruthy();
    const nats = await auth.startLocalNats({ bin: bin!, port: await freePort(), state, onLine: () => undefined });
    try {
      await expect(connect({ servers: nats.url })).rejects.toThrow(/Authorization Violation/);
      const gw = await connect({ servers: nats.url, user: 'gateway', pass: nats.env.gateway.NATS_PASSWORD });
      const worker = await connect({
        servers: nats.url,
        user: 'session-worker',
        pass: nats.env['session-worker'].NATS_PASSWORD,
        inboxPrefix: '_INBOX.session-worker',
      });
      // the gateway may not run tools; the session worker may (no tool runner here: 503, not a refusal)
      await expect(gw.request('tools.exec', '{}', { timeout: 2000 })).rejects.toThrow(/Permissions Violation/);
      await expect(worker.request('tools.exec', '{}', { timeout: 2000 })).rejects.toThrow(/503/);
      await gw.close();
      await worker.close();
      // the operator's password is kept, readable by its owner only
      expect(statSync(path.join(state, 'nats-ops-password')).mode & 0o077).toBe(0);
    } finally {
      nats.child.kill('SIGTERM');
    }
  });

  it('creates Redis users for the gateway, the session worker and the scheduler that reach only their keys', async () => {
    // The install's name makes the user names and the key prefixes.
    const tag = `start_${process.pid}`;
    const adminUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const userName = (s: string) => `${tag}-${s}`;
    const urls = await auth.provisionRedisUsers({ adminUrl, state, env: {}, instance: tag });
    expect(new URL(urls.scheduler.REDIS_URL).username).toBe(userName('scheduler'));
    expect(urls.scheduler.SKALD_BULL_PREFIX).toBe(tag);
    expect(urls.gateway.SKALD_LOGIN_LIMIT_PREFIX).toBe(`${tag}:login:`);
    expect(Object.keys(urls).sort()).toEqual(['gateway', 'scheduler', 'session-worker']);
    const scheduler = new Redis(urls.scheduler.REDIS_URL, { maxRetriesPerRequest: 1 });
    const gateway = new Redis(urls.gateway.REDIS_URL, { maxRetriesPerRequest: 1 });
    const admin = new Redis(adminUrl);
    try {
      await scheduler.set(`${tag}:skald-jobs:probe`, '1');
      await expect(scheduler.set(`${tag}:llm:health:x`, '1')).rejects.toThrow(/NOPERM/);
      await gateway.set(`${tag}:login:probe`, '1');
      await expect(gateway.set(`${tag}:skald-jobs:probe`, '1')).rejects.toThrow(/NOPERM/);
      // a second start keeps the passwords (other clients of the same Redis keep working)
      const again = await auth.provisionRedisUsers({ adminUrl, state, env: {}, instance: tag });
      expect(again).toEqual(urls);
      expect(JSON.parse(readFileSync(path.join(state, 'redis-passwords.json'), 'utf8'))).toHaveProperty('scheduler');
    } finally {
      scheduler.disconnect();
      gateway.disconnect();
      await admin.del(`${tag}:skald-jobs:probe`, `${tag}:login:probe`);
      await admin.call('ACL', 'DELUSER', userName('scheduler'), userName('session-worker'), userName('gateway'));
      admin.disconnect();
    }
  });
});
