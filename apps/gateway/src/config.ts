import { z } from 'zod';
import { DEFAULT_REDIS_PREFIXES, userCapSetting } from '@skald/contracts';
import { BaseConfigSchema } from '@skald/service-kit/config';
import { isLoopbackDevUrl } from './web/dev-proxy';
import { OidcProvidersSetting } from './auth/oidc/oidc-rules';

export const GatewayConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  /** HS256 key for session JWTs (≥ 32 chars). Every gateway replica needs the same one. */
  SKALD_JWT_SECRET: z.string().min(32, 'SKALD_JWT_SECRET must be at least 32 characters'),
  SKALD_TOKEN_TTL_SECS: z.coerce
    .number()
    .int()
    .min(60)
    .default(12 * 3600),
  SKALD_ADMIN_EMAIL: z.string().email().optional(),
  SKALD_ADMIN_PASSWORD: z.string().min(8, 'SKALD_ADMIN_PASSWORD must be at least 8 characters').optional(),
  /**
   * `off`: `POST /api/auth/login` and `PUT /api/auth/password` answer 403 and the login page shows only the single
   * sign-on buttons (API tokens still work). Needs at least one provider in `SKALD_OIDC_PROVIDERS`. The first admin
   * (`SKALD_ADMIN_EMAIL`) is still created; they sign in through a provider with `link_by_verified_email` whose
   * verified e-mail is that address.
   */
  SKALD_PASSWORD_LOGIN: z.enum(['on', 'off']).default('on'),
  /**
   * **Secret.** It holds client secrets. The OpenID Providers the login page offers, as a JSON array of
   * `{"id", "label", "issuer", "client_id", "client_secret", "scopes", "allowed_domains", "allowed_groups",
   * "groups_claim", "link_by_verified_email"}`; each provider's redirect URI is
   * `{SKALD_PUBLIC_URL}/api/auth/oidc/{id}/callback`. docs/identity.md tells what each needs.
   */
  SKALD_OIDC_PROVIDERS: OidcProvidersSetting,
  /** How long a single sign-on may take, from the login button to the provider's callback. */
  SKALD_OIDC_FLOW_TTL_SECS: z.coerce.number().int().min(5).max(3600).default(600),
  /**
   * Single sign-ons one client address may have under way (started, neither finished nor expired), and may start in
   * a minute; beyond either, `GET /api/auth/oidc/{id}/start` answers 429 with Retry-After. Addresses are counted as
   * login throttling counts them (an IPv6 /64 as one; `SKALD_TRUST_PROXY` decides whether X-Forwarded-For counts).
   */
  SKALD_OIDC_MAX_FLOWS_PER_ADDRESS: z.coerce.number().int().min(1).max(100_000).default(50),
  /** Comma-separated origins allowed to open a WebSocket from a browser (default: the gateway's own). */
  SKALD_ALLOWED_ORIGINS: z.string().optional(),
  /** Public base URL, e.g. https://skald.example.com (default http://HOST:PORT). */
  SKALD_PUBLIC_URL: z.string().url().optional(),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /** Prefix of the Redis keys holding the failed-login counters that every gateway replica shares. */
  SKALD_LOGIN_LIMIT_PREFIX: z.string().min(1).default(DEFAULT_REDIS_PREFIXES.loginLimitPrefix),
  /**
   * Failed logins (or wrong current passwords) allowed for one account from one client address within the window
   * (OWASP: consecutive failures of the username + IP pair); then that address gets 429 for that account until the
   * window ends, while the owner elsewhere still logs in. A success clears it.
   */
  SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS: z.coerce.number().int().min(1).max(1000).default(5),
  /** Failed logins allowed per client address within the window, whatever the accounts. */
  SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).max(100_000).default(20),
  /**
   * Failed logins allowed per account within the window, whatever the addresses: a ceiling against guessing from
   * many addresses, far above the per-address limit (reaching it locks the owner out too until the window ends).
   */
  SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(100),
  /** The window of the counters, from the first failure; a locked account or address is free again after it. */
  SKALD_LOGIN_WINDOW_SECS: z.coerce.number().int().min(1).max(86_400).default(900),
  /** Password hashes (argon2id, 19 MiB each) one gateway computes at once, over all logins and password changes. */
  SKALD_LOGIN_MAX_CONCURRENT_HASHES: z.coerce.number().int().min(1).max(64).default(2),
  /** Logins that may wait for a hash on one gateway; beyond them a login is refused at once (503 + Retry-After) unhashed and uncounted. */
  SKALD_LOGIN_HASH_QUEUE: z.coerce.number().int().min(0).max(10_000).default(16),
  /**
   * Express's `trust proxy` for the client address behind a reverse proxy (e.g. `loopback`, `1`,
   * `10.0.0.0/8`); unset: the TCP peer is the client. Only proxies you run may be trusted, or
   * anyone can pick their address with X-Forwarded-For.
   */
  SKALD_TRUST_PROXY: z.string().min(1).optional(),
  /**
   * `on`: an admin may read any user's conversation, read only (`/api/admin/sessions/{id}`); each read of another
   * user's is recorded in `admin_session_reads`. `off`: such reads are refused with 403.
   */
  SKALD_ADMIN_CHAT_ACCESS: z.enum(['on', 'off']).default('on'),
  SKALD_MAX_SOCKETS_PER_USER: userCapSetting('sockets'),
  /**
   * How long a socket's place under `SKALD_MAX_SOCKETS_PER_USER` lives in Redis unless its gateway
   * renews it (every third of it), in ms: a replica that dies frees its users' places within this.
   * The places are kept under `SKALD_LOGIN_LIMIT_PREFIX` + `sockets:` (the gateway's Redis keys).
   */
  SKALD_WS_SOCKET_LEASE_MS: z.coerce.number().int().min(300).max(3_600_000).default(60_000),
  /** How often every open WebSocket re-checks its credential against the database (a lost revocation broadcast ends within this). */
  SKALD_WS_REVALIDATE_SECS: z.coerce.number().min(0.2).max(3600).default(30),
  /** Largest file one upload (`POST /{source}/uploads`) may carry; the workspace quota applies besides. */
  SKALD_UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(25 * 1024 * 1024),
  /** Largest workspace file `GET /files` serves. */
  SKALD_FILES_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(100 * 1024 * 1024),
  /**
   * Dev only (`npm run dev` sets it): the web client is forwarded to Vite's dev server at this loopback http origin,
   * e.g. `http://127.0.0.1:5173`. Refused for other URLs and with `NODE_ENV=production`.
   */
  SKALD_WEB_DEV_URL: z
    .string()
    .refine(
      isLoopbackDevUrl,
      'SKALD_WEB_DEV_URL must be a loopback http origin with a port, e.g. http://127.0.0.1:5173',
    )
    .optional(),
});
export type GatewayConfig = z.infer<typeof GatewayConfigSchema>;

export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
