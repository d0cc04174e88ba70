import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ensureDatabase, migrateUp } from '../data-source';
import { backup, pruneBackups, restore } from './backup';
import { ARCHIVE_FILES } from './manifest';

jest.setTimeout(120_000);

/** backup / restore against the real Postgres: a round trip, and each refusal before anything changes. */
describe('backup and restore (Postgres)', () => {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
  const tag = randomBytes(4).toString('hex');
  const dbUrl = (name: string): string =>
    Object.assign(new URL(base), { pathname: `/skald_bk_${name}_${tag}` }).toString();
  const dir = mkdtempSync(path.join(tmpdir(), 'skald-backup-it-'));
  const env = {
    SKALD_BACKUP_PASSPHRASE: 'a passphrase of some length',
    SKALD_SECRETS_KEY: randomBytes(32).toString('base64'),
  };
  const src = dbUrl('src');
  const archive = path.join(dir, 'a.skald-backup');
  const created: string[] = [src, dbUrl('never')];

  async function sql<T>(url: string, text: string): Promise<T[]> {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(text)).rows as T[];
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    await ensureDatabase(src);
    await migrateUp(src);
    await sql(
      src,
      `INSERT INTO users (id, email, password_hash, role) VALUES (gen_random_uuid(), 'bk-${tag}@skald.test', 'x', 'user')`,
    );
    mkdirSync(path.join(dir, 'ws', 'u1'), { recursive: true });
    writeFileSync(path.join(dir, 'ws', 'u1', 'notes.md'), 'kept\n');
    await backup({ databaseUrl: src, workspaces: path.join(dir, 'ws'), out: archive, env });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    for (const url of created)
      await sql(base, `DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
  });

  it('restores rows and files into a new database and workspaces root', async () => {
    const dst = dbUrl('dst');
    created.push(dst);
    await restore({ archive, databaseUrl: dst, workspaces: path.join(dir, 'ws-dst'), env });
    expect(await sql(dst, `SELECT email FROM users WHERE email = 'bk-${tag}@skald.test'`)).toHaveLength(1);
    expect(readFileSync(path.join(dir, 'ws-dst', 'u1', 'notes.md'), 'utf8')).toBe('kept\n');
  });

  it('refuses a database with tables, and a workspaces root with files, changing nothing', async () => {
    await expect(restore({ archive, databaseUrl: src, workspaces: path.join(dir, 'ws-x'), env })).rejects.toThrow(
      /is not empty \(\d+ tables, views or sequences in schema public\): restore goes into an empty install only/,
    );
    const fresh = dbUrl('fresh');
    created.push(fresh);
    await expect(restore({ archive, databaseUrl: fresh, workspaces: path.join(dir, 'ws'), env })).rejects.toThrow(
      /the workspaces root .* is not empty \(1 entries\)/,
    );
    // Refused before the database was created.
    expect(await sql(base, `SELECT 1 FROM pg_database WHERE datname = '${new URL(fresh).pathname.slice(1)}'`)).toEqual(
      [],
    );
  });

  it('refuses an archive from a newer schema, naming the migration this release lacks', async () => {
    const work = path.join(dir, 'newer');
    mkdirSync(work);
    execFileSync('tar', ['-xf', archive, '-C', work]);
    const manifestFile = path.join(work, ARCHIVE_FILES.manifest);
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { migrations: string[] };
    manifest.migrations.push('FromTheFuture1999999999999');
    writeFileSync(manifestFile, JSON.stringify(manifest));
    const newer = path.join(dir, 'newer.skald-backup');
    execFileSync('tar', ['-cf', newer, '-C', work, ...Object.values(ARCHIVE_FILES)]);
    await expect(
      restore({ archive: newer, databaseUrl: dbUrl('never'), workspaces: path.join(dir, 'ws-never'), env }),
    ).rejects.toThrow(/schema is newer than this release: .*FromTheFuture1999999999999/);
  });

  it("refuses a wrong passphrase, and an install whose SKALD_SECRETS_KEY is not the backup's", async () => {
    const elsewhere = { databaseUrl: dbUrl('never'), workspaces: path.join(dir, 'ws-never') };
    await expect(
      restore({ archive, ...elsewhere, env: { ...env, SKALD_BACKUP_PASSPHRASE: 'not the right passphrase' } }),
    ).rejects.toThrow(/does not open the archive's secrets/);
    await expect(
      restore({ archive, ...elsewhere, env: { ...env, SKALD_SECRETS_KEY: randomBytes(32).toString('base64') } }),
    ).rejects.toThrow(/SKALD_SECRETS_KEY is not the backup's/);
  });

  it('never overwrites: a backup to an existing file is refused', async () => {
    await expect(backup({ databaseUrl: src, workspaces: path.join(dir, 'ws'), out: archive, env })).rejects.toThrow(
      /exists: a backup never overwrites a file/,
    );
  });

  it('--keep: deletes all but the newest archives of the directory, by their dated names, and nothing else', async () => {
    const shelf = path.join(dir, 'shelf');
    mkdirSync(shelf);
    const names = ['skald-20261201T031700Z', 'skald-20261202T031700Z', 'skald-20261203T031700Z'];
    for (const n of names) writeFileSync(path.join(shelf, `${n}.skald-backup`), '');
    writeFileSync(path.join(shelf, 'notes.txt'), '');
    expect(await pruneBackups(shelf, 2)).toEqual([`${names[0]}.skald-backup`]);
    expect(readdirSync(shelf).sort()).toEqual(['notes.txt', `${names[1]}.skald-backup`, `${names[2]}.skald-backup`]);
  });
});
