import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { ensureDatabase, migrateUp } from '../data-source';
import { MIGRATIONS } from '../migrations';
import { instanceOf, provisionServiceRoles, servicePasswordsFromEnv } from '../service-roles';
import { ARCHIVE_FILES, whyNotRestorable, type BackupManifest } from './manifest';
import { openSecrets, sealSecrets } from './sealed-secrets';

const run = promisify(execFile);

/** The secrets a restored install needs to read its data: the MCP credentials' key, and the JWT key (logins survive). */
export const BACKUP_SECRETS = ['SKALD_SECRETS_KEY', 'SKALD_JWT_SECRET'] as const;

/** Where pg_dump and pg_restore are: SKALD_PG_BIN, else the PATH (the images' postgresql-client). */
function pgTool(env: NodeJS.ProcessEnv, name: 'pg_dump' | 'pg_restore'): string {
  return env.SKALD_PG_BIN ? path.join(env.SKALD_PG_BIN, name) : name;
}

/** libpq's connection: the URL without its password (which would show in `ps`), the password in PGPASSWORD. */
function libpq(url: string): { dbname: string; env: NodeJS.ProcessEnv } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = '';
  return { dbname: u.toString(), env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) } };
}

async function tool(cmd: string, args: string[], env: NodeJS.ProcessEnv, what: string): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { env, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (e) {
    const err = e as { code?: unknown; stderr?: string; message: string };
    if (err.code === 'ENOENT')
      throw new Error(`${what}: ${cmd} not found (install postgresql-client, or set SKALD_PG_BIN to its directory)`);
    throw new Error(`${what} failed: ${(err.stderr || err.message).trim()}`);
  }
}

/** The passphrase that seals the archive's secrets: SKALD_BACKUP_PASSPHRASE, or the file SKALD_BACKUP_PASSPHRASE_FILE names. */
export async function backupPassphrase(env: NodeJS.ProcessEnv): Promise<string> {
  if (env.SKALD_BACKUP_PASSPHRASE_FILE)
    return (await readFile(env.SKALD_BACKUP_PASSPHRASE_FILE, 'utf8')).replace(/\r?\n$/, '');
  if (env.SKALD_BACKUP_PASSPHRASE) return env.SKALD_BACKUP_PASSPHRASE;
  throw new Error(
    'set SKALD_BACKUP_PASSPHRASE (or SKALD_BACKUP_PASSPHRASE_FILE): it seals the secrets in the archive; keep it apart from the backups',
  );
}

export interface BackupOptions {
  /** The admin DATABASE_URL (the migrations' one). */
  databaseUrl: string;
  /** The workspaces root (SKALD_WORKSPACES). */
  workspaces: string;
  /** The archive to write (refused if it exists). */
  out: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Writes one archive: the manifest, a pg_dump of the database (one snapshot: pg_dump's own
 * repeatable-read transaction), the workspaces tree, and the secrets of {@link BACKUP_SECRETS} sealed
 * with the passphrase. The database is dumped first and the workspaces read after it, so every file
 * a tool call recorded in the dump had written is in the archive (later writes may be too).
 */
export async function backup(o: BackupOptions): Promise<BackupManifest> {
  if (await exists(o.out)) throw new Error(`${o.out} exists: a backup never overwrites a file`);
  if (!(await isDirectory(o.workspaces)))
    throw new Error(`the workspaces root ${o.workspaces} is not a directory (set SKALD_WORKSPACES)`);
  const secrets: Record<string, string> = {};
  for (const k of BACKUP_SECRETS) if (o.env[k]) secrets[k] = o.env[k];
  const sealed = sealSecrets(secrets, await backupPassphrase(o.env));
  const work = await mkdtemp(path.join(path.dirname(path.resolve(o.out)), '.skald-backup-'));
  try {
    const pg = libpq(o.databaseUrl);
    const dumpFile = path.join(work, ARCHIVE_FILES.database);
    await tool(
      pgTool(o.env, 'pg_dump'),
      ['--format=custom', '--no-owner', '--no-privileges', `--file=${dumpFile}`, `--dbname=${pg.dbname}`],
      pg.env,
      'pg_dump',
    );
    // The schema level of what was dumped: read from the dump itself, not the live database (which
    // may have been migrated since).
    const migrations = await dumpedMigrations(o.env, dumpFile);
    await tarWorkspaces(o.workspaces, path.join(work, ARCHIVE_FILES.workspaces));
    const manifest: BackupManifest = {
      format: 'skald-backup',
      version: 1,
      createdAt: new Date().toISOString(),
      migrations,
      postgres: {
        pgDump: (await tool(pgTool(o.env, 'pg_dump'), ['--version'], pg.env, 'pg_dump --version')).trim(),
        server: await serverVersion(o.databaseUrl),
      },
      secrets: Object.keys(secrets),
    };
    await writeFile(path.join(work, ARCHIVE_FILES.manifest), `${JSON.stringify(manifest, null, 2)}\n`);
    await writeFile(path.join(work, ARCHIVE_FILES.secrets), `${JSON.stringify(sealed)}\n`);
    const partial = path.join(work, 'archive.tar');
    // The manifest first: restore reads it before anything else.
    await tool('tar', ['-cf', partial, '-C', work, ...Object.values(ARCHIVE_FILES)], process.env, 'tar');
    await chmod(partial, 0o600);
    // Whole or not at all: the archive appears under its name only once complete.
    await rename(partial, o.out);
    return manifest;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The rows of skald_migrations in a pg_dump archive, in order. */
async function dumpedMigrations(env: NodeJS.ProcessEnv, dumpFile: string): Promise<string[]> {
  const sql = await tool(
    pgTool(env, 'pg_restore'),
    ['--data-only', '--table=skald_migrations', '--file=-', dumpFile],
    env,
    'pg_restore (reading the schema level)',
  );
  // COPY public.skald_migrations (id, "timestamp", name) FROM stdin;  then tab-separated rows up to `\.`
  const copy = /^COPY public\.skald_migrations \(([^)]*)\) FROM stdin;\n([\s\S]*?)^\\\.$/m.exec(sql);
  if (!copy) throw new Error('the database has no skald_migrations table: is it a Skald database (cli.js up)?');
  const cols = copy[1].split(',').map((c) => c.trim().replace(/"/g, ''));
  const rows = copy[2]
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t'));
  const id = cols.indexOf('id');
  return rows.sort((a, b) => Number(a[id]) - Number(b[id])).map((r) => r[cols.indexOf('name')]);
}

async function serverVersion(url: string): Promise<string> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
  } finally {
    await c.end();
  }
}

async function tarWorkspaces(root: string, file: string): Promise<void> {
  try {
    await run('tar', ['-czf', file, '--numeric-owner', '-C', root, '.'], { maxBuffer: 16 * 1024 * 1024 });
  } catch (e) {
    // GNU tar exits 1 when a file changed while it was read (a turn writing meanwhile): the archive is
    // whole, that file as it was at some instant. Anything else is a failure.
    const err = e as { code?: unknown; stderr?: string; message: string };
    if (err.code !== 1) throw new Error(`tar of ${root} failed: ${(err.stderr || err.message).trim()}`);
  }
}

export interface RestoreOptions {
  archive: string;
  /** The admin DATABASE_URL of the empty install (the database is created if missing). */
  databaseUrl: string;
  /** The empty (or missing) workspaces root. */
  workspaces: string;
  /** Where to write the restored secrets as KEY=VALUE lines (mode 0600; refused if it exists). */
  secretsOut?: string;
  env: NodeJS.ProcessEnv;
}

export interface RestoreResult {
  manifest: BackupManifest;
  /** Migrations applied after the dump's (the archive came from an older release). */
  applied: string[];
}

/**
 * Restores an archive into an empty install: refuses an archive of a newer schema, a database with
 * tables, or a workspaces root with files, each before changing anything. Then restores the dump
 * (one transaction), applies the migrations the dump lacks, provisions the service roles (the dump
 * carries no roles or grants) and unpacks the workspaces.
 */
export async function restore(o: RestoreOptions): Promise<RestoreResult> {
  const work = await mkdtemp(path.join(tmpdir(), 'skald-restore-'));
  try {
    await tool('tar', ['-xf', o.archive, '-C', work, ARCHIVE_FILES.manifest], process.env, `reading ${o.archive}`);
    const manifest = JSON.parse(await readFile(path.join(work, ARCHIVE_FILES.manifest), 'utf8')) as BackupManifest;
    const why = whyNotRestorable(
      manifest,
      MIGRATIONS.map((m) => m.name),
    );
    if (why) throw new Error(`${o.archive}: ${why}`);
    const secrets = openSecrets(
      JSON.parse(await readFileFromArchive(o.archive, work, ARCHIVE_FILES.secrets)),
      await backupPassphrase(o.env),
    );
    if (o.secretsOut && (await exists(o.secretsOut)))
      throw new Error(`${o.secretsOut} exists: restore never overwrites a file`);
    const key = o.env.SKALD_SECRETS_KEY;
    if (!o.secretsOut && secrets.SKALD_SECRETS_KEY && key !== secrets.SKALD_SECRETS_KEY)
      throw new Error(
        "this install's SKALD_SECRETS_KEY is not the backup's: the sealed MCP credentials would not open. Pass " +
          '--secrets-out <file> and install the values it writes (SKALD_SECRETS_KEY, SKALD_JWT_SECRET)',
      );
    await refuseNonEmptyWorkspaces(o.workspaces);
    await ensureDatabase(o.databaseUrl);
    await refuseNonEmptyDatabase(o.databaseUrl);

    await tool(
      'tar',
      ['-xf', o.archive, '-C', work, ARCHIVE_FILES.database, ARCHIVE_FILES.workspaces],
      process.env,
      'tar',
    );
    const pg = libpq(o.databaseUrl);
    await tool(
      pgTool(o.env, 'pg_restore'),
      [
        '--no-owner',
        '--no-privileges',
        '--exit-on-error',
        '--single-transaction',
        `--dbname=${pg.dbname}`,
        path.join(work, ARCHIVE_FILES.database),
      ],
      pg.env,
      'pg_restore',
    );
    const applied = await migrateUp(o.databaseUrl);
    await provisionServiceRoles(
      o.databaseUrl,
      servicePasswordsFromEnv(o.env),
      undefined,
      instanceOf(o.databaseUrl, o.env),
    );
    await mkdir(o.workspaces, { recursive: true });
    await tool(
      'tar',
      ['-xzf', path.join(work, ARCHIVE_FILES.workspaces), '--numeric-owner', '-C', o.workspaces],
      process.env,
      'unpacking the workspaces',
    );
    if (o.secretsOut)
      await writeFile(
        o.secretsOut,
        Object.entries(secrets)
          .map(([k, v]) => `${k}=${v}\n`)
          .join(''),
        {
          mode: 0o600,
          flag: 'wx',
        },
      );
    return { manifest, applied };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function readFileFromArchive(archive: string, work: string, name: string): Promise<string> {
  await tool('tar', ['-xf', archive, '-C', work, name], process.env, `reading ${name} of ${archive}`);
  return readFile(path.join(work, name), 'utf8');
}

async function refuseNonEmptyWorkspaces(root: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (entries.length > 0)
    throw new Error(
      `the workspaces root ${root} is not empty (${entries.length} entries): restore goes into an empty install only`,
    );
}

async function refuseNonEmptyDatabase(url: string): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')`,
    );
    if (rows[0].n > 0)
      throw new Error(
        `the database ${new URL(url).pathname.slice(1)} is not empty (${rows[0].n} tables, views or sequences in ` +
          'schema public): restore goes into an empty install only; name a new database in DATABASE_URL',
      );
  } finally {
    await c.end();
  }
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** The file name suffix of archives in a backup directory, which {@link pruneBackups} keeps to a count. */
export const ARCHIVE_SUFFIX = '.skald-backup';

/**
 * Deletes all but the `keep` newest archives (`*.skald-backup`, by name: the CronJob names them by UTC
 * time) in `dir`; returns the names deleted.
 */
export async function pruneBackups(dir: string, keep: number): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith(ARCHIVE_SUFFIX)).sort();
  const old = names.slice(0, Math.max(0, names.length - keep));
  for (const n of old) await unlink(path.join(dir, n));
  return old;
}
