/** The first file of a backup archive: what it holds and which schema its database dump has. */
export interface BackupManifest {
  format: 'skald-backup';
  version: 1;
  createdAt: string;
  /** The migrations applied in the dumped database (skald_migrations, in order): its schema level. */
  migrations: string[];
  /** pg_dump's and the server's versions (`pg_dump --version`, `server_version`). */
  postgres: { pgDump: string; server: string };
  /** The names of the sealed secrets (their values are in secrets.json, encrypted). */
  secrets: string[];
}

/** The files of an archive (a plain tar). */
export const ARCHIVE_FILES = {
  manifest: 'manifest.json',
  database: 'database.pgdump',
  workspaces: 'workspaces.tar.gz',
  secrets: 'secrets.json',
} as const;

/**
 * Why `manifest` cannot be restored by a release whose migrations are `known` (in order), or null.
 * An archive from a newer schema is refused: this release's code would run against tables it does not know.
 */
export function whyNotRestorable(manifest: unknown, known: readonly string[]): string | null {
  const m = manifest as Partial<BackupManifest> | null;
  if (m?.format !== 'skald-backup') return 'not a Skald backup (manifest.json has no format "skald-backup")';
  if (m.version !== 1) return `backup format version ${String(m.version)} is newer than this release reads (1)`;
  if (!Array.isArray(m.migrations) || m.migrations.length === 0) return 'the manifest lists no migrations';
  const unknown = m.migrations.filter((name) => !known.includes(name));
  if (unknown.length > 0)
    return (
      `the backup's schema is newer than this release: it has ${unknown.length} migration(s) this release does ` +
      `not know (${unknown.join(', ')}); restore it with the release that made it, or a newer one`
    );
  return null;
}
