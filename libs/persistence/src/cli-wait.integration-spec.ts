import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** `cli.js wait <app> <max-secs>`: the init step's loop ends at its deadline with an error naming what it waited for. */
describe('cli.js wait', () => {
  it('gives up after max-secs when the database never answers, exit 1, naming the database', () => {
    const started = Date.now();
    const r = spawnSync(process.execPath, [join(__dirname, '..', 'dist', 'cli.js'), 'wait', 'gateway', '1'], {
      env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('schema not ready after 1 s');
    expect(r.stderr).toContain('the database');
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
