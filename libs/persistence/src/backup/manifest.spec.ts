import { whyNotRestorable, type BackupManifest } from './manifest';

const manifest = (migrations: string[]): BackupManifest => ({
  format: 'skald-backup',
  version: 1,
  createdAt: '2026-12-06T12:00:00.000Z',
  migrations,
  postgres: { pgDump: 'pg_dump (PostgreSQL) 15.20', server: '15.20' },
  secrets: ['SKALD_SECRETS_KEY'],
});

describe('whyNotRestorable', () => {
  const known = ['Initial1', 'Second2', 'Third3'];

  it('takes an archive of this schema or an older one (restore applies the rest)', () => {
    expect(whyNotRestorable(manifest(known), known)).toBeNull();
    expect(whyNotRestorable(manifest(['Initial1']), known)).toBeNull();
  });

  it('refuses an archive from a newer schema, naming the migrations this release lacks', () => {
    expect(whyNotRestorable(manifest([...known, 'Fourth4']), known)).toBe(
      "the backup's schema is newer than this release: it has 1 migration(s) this release does not know " +
        '(Fourth4); restore it with the release that made it, or a newer one',
    );
  });

  it('refuses what is not a Skald backup, or of a newer format', () => {
    expect(whyNotRestorable({ hello: 1 }, known)).toMatch(/not a Skald backup/);
    expect(whyNotRestorable(null, known)).toMatch(/not a Skald backup/);
    expect(whyNotRestorable({ ...manifest(known), version: 2 }, known)).toMatch(/format version 2 is newer/);
    expect(whyNotRestorable(manifest([]), known)).toMatch(/no migrations/);
  });
});
