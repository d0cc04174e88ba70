import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

describe('the start command (npm start)', () => {
  it.each([
    ['PostgreSQL', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/skald' }, 'pg_ctlcluster'],
    ['Redis', { REDIS_URL: 'redis://127.0.0.1:1' }, 'redis-server'],
    ['NATS', { NATS_URL: 'nats://127.0.0.1:1' }, 'nats-server'],
  ])(
    'names an unreachable %s with the command that starts it and exits non-zero at once',
    (name, env, startCommand) => {
      const started = Date.now();
      const r = spawnSync(process.execPath, ['scripts/dev.js'], {
        cwd: ROOT,
        env: { ...process.env, ...env },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`${name}`);
      expect(r.stderr).toContain('is not reachable at 127.0.0.1:1');
      expect(r.stderr).toContain(startCommand);
      expect(Date.now() - started).toBeLessThan(20_000);
    },
  );
});
