import { z } from 'zod';

/** One OpenID Provider the login page offers (an entry of `SKALD_OIDC_PROVIDERS`). */
export const OidcProviderConfig = z
  .object({
    /** In the login button's link and the redirect URI: `/api/auth/oidc/{id}/callback`. */
    id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'id: lower-case letters, digits and -, at most 32'),
    /** The button's text: "Sign in with {label}". */
    label: z.string().min(1).max(64),
    /** The issuer identifier; its discovery document is `{issuer}/.well-known/openid-configuration`. */
    issuer: z.url(),
    client_id: z.string().min(1),
    client_secret: z.string().min(1),
    scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/)).default(['openid', 'email', 'profile']),
    /** E-mail domains allowed in (lower case); empty: any. The ID token's e-mail must be verified. */
    allowed_domains: z.array(z.string().min(1).max(253)).default([]),
    /** Groups of which the user must belong to one (names as the groups claim spells them); empty: any. */
    allowed_groups: z.array(z.string().min(1).max(256)).default([]),
    /** The ID token claim listing the user's groups. */
    groups_claim: z.string().min(1).default('groups'),
    /** A first sign-in whose verified e-mail is that of an existing account signs in to that account. */
    link_by_verified_email: z.boolean().default(false),
  })
  .strict();
export type OidcProviderConfig = z.infer<typeof OidcProviderConfig>;

/** `SKALD_OIDC_PROVIDERS`: a JSON array of providers, ids unique; unset or empty is none. */
export const OidcProvidersSetting = z
  .string()
  .default('[]')
  .transform((s, ctx) => {
    try {
      return JSON.parse(s.trim() === '' ? '[]' : s) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'SKALD_OIDC_PROVIDERS must be a JSON array' });
      return z.NEVER;
    }
  })
  .pipe(
    z
      .array(OidcProviderConfig)
      .refine((ps) => new Set(ps.map((p) => p.id)).size === ps.length, 'SKALD_OIDC_PROVIDERS: ids must be unique'),
  );

/** Why a sign-in was refused: the login page shows a sentence for each (`#oidc-error={code}`). */
export const OIDC_REFUSALS = [
  'refused_domain',
  'refused_group',
  'expired',
  'no_email',
  'email_taken',
  'disabled',
  'failed',
  'denied',
  'unavailable',
] as const;
export type OidcRefusal = (typeof OIDC_REFUSALS)[number];

/** The claims of a verified ID token that the rules read. */
export interface IdClaims {
  sub: string;
  email?: unknown;
  email_verified?: unknown;
  [claim: string]: unknown;
}

/** The verified e-mail of the claims (lower case), or null when absent, malformed or not verified. */
export function verifiedEmail(claims: IdClaims): string | null {
  const email = claims.email;
  if (claims.email_verified !== true || typeof email !== 'string') return null;
  return /^[^\s@]{1,64}@[^\s@]{1,253}$/.test(email) ? email.toLowerCase() : null;
}

/** The groups the claim names (strings only; anything else in it is ignored), at most 256 of them. */
export function claimedGroups(claims: IdClaims, claim: string): string[] {
  const value = claims[claim];
  const list = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  return [...new Set(list.filter((g): g is string => typeof g === 'string' && g.length > 0 && g.length <= 256))].slice(
    0,
    256,
  );
}

/** The allow-lists of the provider: null when the claims pass, else why not. */
export function allowListRefusal(p: OidcProviderConfig, claims: IdClaims): OidcRefusal | null {
  if (p.allowed_domains.length > 0) {
    const email = verifiedEmail(claims);
    const domain = email?.slice(email.lastIndexOf('@') + 1);
    if (!domain || !p.allowed_domains.some((d) => d.toLowerCase() === domain)) return 'refused_domain';
  }
  if (p.allowed_groups.length > 0) {
    const groups = claimedGroups(claims, p.groups_claim);
    if (!groups.some((g) => p.allowed_groups.includes(g))) return 'refused_group';
  }
  return null;
}

/** What a sign-in does with the account: the one linked already, a link to an existing one, a new one, or refusal. */
export type AccountDecision =
  | { kind: 'linked'; userId: string }
  | { kind: 'link'; userId: string; email: string }
  | { kind: 'create'; email: string }
  | { kind: 'refuse'; why: OidcRefusal };

/**
 * `linkedUserId`: the account already bound to (provider, subject); `byEmail`: the account whose
 * e-mail the claims name (when any). An existing account is joined only through a verified e-mail and
 * the provider's `link_by_verified_email`; a new account needs an e-mail nobody has.
 */
export function accountDecision(
  p: OidcProviderConfig,
  claims: IdClaims,
  linkedUserId: string | null,
  byEmail: { id: string } | null,
): AccountDecision {
  if (linkedUserId) return { kind: 'linked', userId: linkedUserId };
  const verified = verifiedEmail(claims);
  if (byEmail) {
    return p.link_by_verified_email && verified
      ? { kind: 'link', userId: byEmail.id, email: verified }
      : { kind: 'refuse', why: 'email_taken' };
  }
  const email = verified ?? (typeof claims.email === 'string' ? claims.email : null);
  if (!email || !/^[^\s@]{1,64}@[^\s@]{1,253}$/.test(email)) return { kind: 'refuse', why: 'no_email' };
  return { kind: 'create', email: email.toLowerCase() };
}

const RETURN_BASE = 'https://skald.invalid';

/**
 * Where the browser goes after signing in: a same-origin path (`/`, `/#inbox`, `/x?y`), else `/`.
 * Refused: absolute URLs, scheme-relative `//host`, back-slashes (browsers read `/\host` as `//host`),
 * control characters and spaces, anything that parses to another origin, and anything over 512 chars.
 */
export function safeReturnTo(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 512) return '/';
  if (!raw.startsWith('/') || raw.startsWith('//') || /[\\\s]/.test(raw)) return '/';
  if (!/^[\x21-\x7e]+$/.test(raw)) return '/';
  let url: URL;
  try {
    url = new URL(raw, RETURN_BASE);
  } catch {
    return '/';
  }
  if (url.origin !== RETURN_BASE) return '/';
  const out = `${url.pathname}${url.search}${url.hash}`;
  return out.startsWith('/') && !out.startsWith('//') ? out : '/';
}
