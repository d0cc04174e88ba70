import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { SkaldApiError, SkaldConnectionError } from '@skald/client';
import type { ConfigStore, Credential } from './config.ts';
import { CliError, describeError, EXIT, parseServerUrl } from './errors.ts';
import { resolveCredential, type Runtime } from './runtime.ts';

describe('describeError: one line naming what is wrong, and the exit code', () => {
  it('a refused credential says to log in again, with the unauthorized code', () => {
    const d = describeError(new SkaldApiError(401, 'unauthorized', 'invalid token'));
    expect(d).toEqual({
      message: 'the server refused the credential (expired or revoked): run skald login',
      code: EXIT.unauthorized,
    });
    expect(describeError(new SkaldConnectionError('unauthorized', 'the credential ended: closed 4401'))).toEqual({
      message: 'the credential ended: closed 4401: run skald login',
      code: EXIT.unauthorized,
    });
  });

  it('an unreachable server names the URL and the cause in words', () => {
    const e = new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) });
    expect(describeError(e, 'http://127.0.0.1:9')).toEqual({
      message: 'cannot reach the server at http://127.0.0.1:9: nothing listens there',
      code: EXIT.error,
    });
    const dns = new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ENOTFOUND' }) });
    expect(describeError(dns, 'https://nope.invalid').message).toBe(
      'cannot reach the server at https://nope.invalid: no such host',
    );
  });

  it("the server's refusal keeps its message, field and status; 429 says when to try again", () => {
    expect(describeError(new SkaldApiError(404, 'not_found', 'session not found')).message).toBe(
      'session not found [404 not_found]',
    );
    expect(describeError(new SkaldApiError(400, 'invalid_input', 'too long', 'title')).message).toBe(
      'too long (title) [400 invalid_input]',
    );
    expect(describeError(new SkaldApiError(429, 'rate_limited', 'slow down', undefined, 30)).message).toBe(
      'too many requests: try again in 30 s (slow down)',
    );
  });

  it('a CliError keeps its own code', () => {
    expect(describeError(new CliError('the prompt is empty', EXIT.usage))).toEqual({
      message: 'the prompt is empty',
      code: EXIT.usage,
    });
  });

  it('the exit codes are distinct (a script can tell them apart)', () => {
    const codes = Object.values(EXIT);
    expect(new Set(codes).size).toBe(codes.length);
    expect(EXIT.needsHuman).toBe(3);
  });
});

describe('parseServerUrl', () => {
  it('answers the origin of an http(s) URL', () => {
    expect(parseServerUrl('https://skald.example.com/')).toBe('https://skald.example.com');
    expect(parseServerUrl(' http://127.0.0.1:3000 ')).toBe('http://127.0.0.1:3000');
  });

  it('refuses other schemes, credentials in the URL, paths and garbage, naming the URL', () => {
    for (const bad of [
      'ftp://x',
      'skald.example.com',
      'https://u:p@x.com',
      'https://x.com/api',
      'https://x.com/?a=1',
      '',
    ])
      expect(() => parseServerUrl(bad)).toThrow(
        new RegExp(`^bad server URL "${bad.replace(/[.?*+^$()[\]\\|]/g, '\\$&')}"`),
      );
  });

  it('any string: either an http(s) origin or a usage error naming it, never another throw', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl({ withQueryParameters: true, withFragments: true })), (raw) => {
        try {
          const u = parseServerUrl(raw);
          const parsed = new URL(u);
          expect(parsed.origin).toBe(u);
          expect(['http:', 'https:']).toContain(parsed.protocol);
        } catch (e) {
          expect(e).toBeInstanceOf(CliError);
          expect((e as CliError).code).toBe(EXIT.usage);
          expect((e as CliError).message).toContain('bad server URL');
        }
      }),
      { seed: 37, numRuns: 3000 },
    );
  });
});

describe('resolveCredential: the environment over the stored login, never a stored token to another server', () => {
  const stored: Credential = {
    url: 'https://a.example.com',
    token: 'jwt',
    kind: 'password',
    email: 'u@example.com',
    expires_at: '2030-01-01T00:00:00.000Z',
  };
  const rt = (env: NodeJS.ProcessEnv, c: Credential | null, now = Date.parse('2026-01-01')): Runtime =>
    ({
      env,
      store: { read: async () => c, file: '/cfg/skald/credentials.json' } as unknown as ConfigStore,
      now: () => now,
    }) as unknown as Runtime;

  it('SKALD_URL + SKALD_TOKEN win over the stored login', async () => {
    await expect(
      resolveCredential(rt({ SKALD_URL: 'https://b.example.com', SKALD_TOKEN: 't' }, stored)),
    ).resolves.toEqual({ url: 'https://b.example.com', token: 't', kind: 'token' });
    await expect(resolveCredential(rt({ SKALD_TOKEN: 't' }, stored))).resolves.toMatchObject({
      url: stored.url,
      token: 't',
    });
  });

  it('SKALD_URL naming another server than the stored login is refused, not sent the stored token', async () => {
    await expect(resolveCredential(rt({ SKALD_URL: 'https://evil.example.com' }, stored))).rejects.toThrow(
      'logged in to https://a.example.com, not SKALD_URL=https://evil.example.com',
    );
  });

  it('nothing stored, or an expired login: run skald login (code 4)', async () => {
    await expect(resolveCredential(rt({}, null))).rejects.toMatchObject({ code: EXIT.unauthorized });
    await expect(resolveCredential(rt({}, stored, Date.parse('2031-01-01')))).rejects.toThrow(
      'the login to https://a.example.com expired: run skald login',
    );
    await expect(resolveCredential(rt({ SKALD_TOKEN: 't' }, null))).rejects.toThrow('set SKALD_URL too');
  });
});
