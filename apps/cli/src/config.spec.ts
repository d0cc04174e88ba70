import { mkdtempSync, rmSync, statSync, writeFileSync, mkdirSync, chmodSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { ConfigStore, configDir, type Credential } from './config';

const cred: Credential = { url: 'https://skald.example.com', token: 'sk-secret', kind: 'token' };

describe('configDir', () => {
  it('is $XDG_CONFIG_HOME/skald, else ~/.config/skald; a relative XDG_CONFIG_HOME is ignored (the XDG spec)', () => {
    expect(configDir({ XDG_CONFIG_HOME: '/x/conf' }, '/home/u')).toBe('/x/conf/skald');
    expect(configDir({}, '/home/u')).toBe('/home/u/.config/skald');
    expect(configDir({ XDG_CONFIG_HOME: '' }, '/home/u')).toBe('/home/u/.config/skald');
    expect(configDir({ XDG_CONFIG_HOME: 'rel/conf' }, '/home/u')).toBe('/home/u/.config/skald');
  });
});

describe('ConfigStore', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'skald-cli-config-'));
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  const mode = (p: string) => statSync(p).mode & 0o777;

  it('writes the credential 0600 in a 0700 directory it creates, and reads it back', async () => {
    const store = new ConfigStore(path.join(tmp, 'conf', 'skald'));
    expect(await store.read()).toBeNull();
    await store.write(cred);
    expect(mode(store.dir)).toBe(0o700);
    expect(mode(store.file)).toBe(0o600);
    expect(await store.read()).toEqual(cred);
  });

  it('tightens a directory made by hand with looser modes, and a file rewritten keeps 0600', async () => {
    const dir = path.join(tmp, 'skald');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    writeFileSync(path.join(dir, 'credentials.json'), '{}', { mode: 0o644 });
    const store = new ConfigStore(dir);
    await store.write(cred);
    expect(mode(dir)).toBe(0o700);
    expect(mode(store.file)).toBe(0o600);
    expect(JSON.parse(readFileSync(store.file, 'utf8'))).toEqual(cred);
  });

  it('remove forgets it (true once, then false)', async () => {
    const store = new ConfigStore(path.join(tmp, 'skald'));
    await store.write(cred);
    expect(await store.remove()).toBe(true);
    expect(await store.read()).toBeNull();
    expect(await store.remove()).toBe(false);
  });

  it('any file that is not a credential is an error naming the file and the fix, never a half-read credential', async () => {
    const store = new ConfigStore(path.join(tmp, 'skald'));
    mkdirSync(store.dir, { recursive: true });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.record({ url: fc.anything(), token: fc.anything(), kind: fc.anything() }).map((o) => JSON.stringify(o)),
        ),
        async (text) => {
          writeFileSync(store.file, text);
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          const valid =
            typeof parsed === 'object' &&
            parsed !== null &&
            typeof (parsed as Credential).url === 'string' &&
            typeof (parsed as Credential).token === 'string' &&
            (parsed as Credential).token !== '' &&
            ['password', 'token'].includes((parsed as Credential).kind) &&
            ['email', 'expires_at'].every((k) => {
              const v = (parsed as Record<string, unknown>)[k];
              return v === undefined || typeof v === 'string';
            });
          if (valid) await expect(store.read()).resolves.toMatchObject({ url: (parsed as Credential).url });
          else
            await expect(store.read()).rejects.toThrow(`${store.file} is not a skald credential file: run skald login`);
        },
      ),
      { seed: 37, numRuns: 300 },
    );
  });
});
