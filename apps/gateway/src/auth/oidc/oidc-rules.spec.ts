import fc from 'fast-check';
import {
  accountDecision,
  allowListRefusal,
  claimedGroups,
  OidcProviderConfig,
  OidcProvidersSetting,
  safeReturnTo,
  verifiedEmail,
} from './oidc-rules';

const SEED = { seed: 390_001, numRuns: 2000 };

const provider = (over: Partial<OidcProviderConfig> = {}): OidcProviderConfig =>
  OidcProviderConfig.parse({
    id: 'kc',
    label: 'Keycloak',
    issuer: 'https://id.example.com/realms/skald',
    client_id: 'skald',
    client_secret: 's3cret',
    ...over,
  });

/** Would a browser on https://skald.example leave the origin when sent to `location = value`? */
function leavesOrigin(value: string): boolean {
  return new URL(value, 'https://skald.example/login').origin !== 'https://skald.example';
}

describe('return-to after sign-in: only a same-origin path', () => {
  it.each([
    ['/#inbox', '/#inbox'],
    ['/', '/'],
    ['/a/b?c=d#e', '/a/b?c=d#e'],
    ['//evil.example', '/'],
    ['/\\evil.example', '/'],
    ['\\\\evil.example', '/'],
    ['https://evil.example/', '/'],
    ['javascript:alert(1)', '/'],
    ['/%0a/evil', '/%0a/evil'],
    ['/\t/evil.example', '/'],
    [' //evil.example', '/'],
    ['/../..//evil.example', '/'],
    ['', '/'],
  ])('%j → %j', (raw, out) => {
    expect(safeReturnTo(raw)).toBe(out);
  });

  it('hostile values (generated) never leave the origin', () => {
    const piece = fc.constantFrom(
      '/',
      '//',
      '\\',
      '.',
      '..',
      '@',
      ':',
      'evil.example',
      'https:',
      'javascript:',
      '%2f',
      '%5c',
      '\t',
      '\n',
      ' ',
      '#',
      '?',
      '\u3002',
      '\uff0f',
    );
    const hostile = fc.oneof(
      fc.array(piece, { maxLength: 8 }).map((a) => a.join('')),
      fc.string(),
      fc.webUrl(),
    );
    fc.assert(
      fc.property(hostile, (raw) => {
        const out = safeReturnTo(raw);
        expect(out.startsWith('/')).toBe(true);
        expect(out.startsWith('//')).toBe(false);
        expect(leavesOrigin(out)).toBe(false);
      }),
      SEED,
    );
  });
});

describe('allow-lists', () => {
  const claims = (email: unknown, verified: unknown, groups?: unknown) => ({
    sub: 'x',
    email,
    email_verified: verified,
    ...(groups === undefined ? {} : { groups }),
  });

  it('a domain list needs a verified e-mail of a listed domain', () => {
    const p = provider({ allowed_domains: ['example.com'] });
    expect(allowListRefusal(p, claims('a@example.com', true))).toBeNull();
    expect(allowListRefusal(p, claims('a@EXAMPLE.com', true))).toBeNull();
    expect(allowListRefusal(p, claims('a@example.com', false))).toBe('refused_domain');
    expect(allowListRefusal(p, claims('a@example.com', 'true'))).toBe('refused_domain');
    expect(allowListRefusal(p, claims('a@example.com.evil', true))).toBe('refused_domain');
    expect(allowListRefusal(p, claims('a@evil.example.com', true))).toBe('refused_domain');
    expect(allowListRefusal(p, claims('example.com@evil.com', true))).toBe('refused_domain');
    expect(allowListRefusal(p, claims(['a@example.com'], true))).toBe('refused_domain');
    expect(allowListRefusal(p, { sub: 'x' })).toBe('refused_domain');
  });

  it('a group list needs one listed group in the claim the provider names', () => {
    const p = provider({ allowed_groups: ['skald-users'], groups_claim: 'roles' });
    expect(allowListRefusal(p, { sub: 'x', roles: ['other', 'skald-users'] })).toBeNull();
    expect(allowListRefusal(p, { sub: 'x', roles: 'skald-users' })).toBeNull();
    expect(allowListRefusal(p, { sub: 'x', groups: ['skald-users'] })).toBe('refused_group');
    expect(allowListRefusal(p, { sub: 'x', roles: ['Skald-Users'] })).toBe('refused_group');
    expect(allowListRefusal(p, { sub: 'x', roles: [{ name: 'skald-users' }] })).toBe('refused_group');
    expect(allowListRefusal(p, { sub: 'x' })).toBe('refused_group');
  });

  it('no lists: anyone the provider signed in (generated claims)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (extra) => {
        expect(allowListRefusal(provider(), { ...extra, sub: 's' })).toBeNull();
      }),
      SEED,
    );
  });

  it('generated claims pass a domain list only with a verified e-mail of that exact domain', () => {
    const p = provider({ allowed_domains: ['corp.example'] });
    fc.assert(
      fc.property(fc.oneof(fc.emailAddress(), fc.string()), fc.oneof(fc.boolean(), fc.jsonValue()), (email, v) => {
        const ok = allowListRefusal(p, { sub: 's', email, email_verified: v }) === null;
        expect(ok).toBe(
          v === true &&
            email.toLowerCase().endsWith('@corp.example') &&
            verifiedEmail({ sub: 's', email, email_verified: v }) !== null,
        );
      }),
      SEED,
    );
  });

  it('the groups claim keeps strings only, deduplicated', () => {
    expect(claimedGroups({ sub: 's', groups: ['a', 'a', 1, null, '', 'b'] }, 'groups')).toEqual(['a', 'b']);
    expect(claimedGroups({ sub: 's', groups: { a: 1 } }, 'groups')).toEqual([]);
  });
});

describe('which account a sign-in reaches', () => {
  const verified = { sub: 's', email: 'Ann@Example.com', email_verified: true };
  const unverified = { sub: 's', email: 'ann@example.com', email_verified: false };

  it('an identity already linked wins, whatever the e-mail says', () => {
    expect(accountDecision(provider(), unverified, 'u1', { id: 'u2' })).toEqual({ kind: 'linked', userId: 'u1' });
  });

  it('an existing account is joined only by a verified e-mail and the explicit setting', () => {
    expect(accountDecision(provider({ link_by_verified_email: true }), verified, null, { id: 'u2' })).toEqual({
      kind: 'link',
      userId: 'u2',
      email: 'ann@example.com',
    });
    expect(accountDecision(provider(), verified, null, { id: 'u2' })).toEqual({ kind: 'refuse', why: 'email_taken' });
    expect(accountDecision(provider({ link_by_verified_email: true }), unverified, null, { id: 'u2' })).toEqual({
      kind: 'refuse',
      why: 'email_taken',
    });
    expect(
      accountDecision(provider({ link_by_verified_email: true }), { ...verified, email_verified: 'true' }, null, {
        id: 'u2',
      }),
    ).toEqual({ kind: 'refuse', why: 'email_taken' });
  });

  it('a new account needs an e-mail; generated claims never link without email_verified === true', () => {
    expect(accountDecision(provider(), { sub: 's' }, null, null)).toEqual({ kind: 'refuse', why: 'no_email' });
    expect(accountDecision(provider(), verified, null, null)).toEqual({ kind: 'create', email: 'ann@example.com' });
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, setting) => {
        const d = accountDecision(
          provider({ link_by_verified_email: setting }),
          { ...verified, email_verified: v },
          null,
          {
            id: 'u2',
          },
        );
        expect(d.kind === 'link').toBe(setting && v === true);
      }),
      SEED,
    );
  });
});

describe('SKALD_OIDC_PROVIDERS', () => {
  const one = { id: 'kc', label: 'K', issuer: 'https://id.example', client_id: 'c', client_secret: 's' };
  it('parses a list, with defaults', () => {
    const [p] = OidcProvidersSetting.parse(JSON.stringify([one]));
    expect(p.scopes).toEqual(['openid', 'email', 'profile']);
    expect(p.link_by_verified_email).toBe(false);
  });
  it('refuses duplicate ids, unknown keys, bad JSON', () => {
    expect(OidcProvidersSetting.safeParse(JSON.stringify([one, one])).success).toBe(false);
    expect(OidcProvidersSetting.safeParse(JSON.stringify([{ ...one, allowed_domain: ['x'] }])).success).toBe(false);
    expect(OidcProvidersSetting.safeParse('[').success).toBe(false);
    expect(OidcProvidersSetting.parse(undefined)).toEqual([]);
    // an optional Secret key or a Compose pass-through set but empty: no provider
    expect(OidcProvidersSetting.parse('')).toEqual([]);
    expect(OidcProvidersSetting.parse(' \n')).toEqual([]);
  });
});
