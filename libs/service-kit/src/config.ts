import { z } from 'zod';

/** A comma-separated list setting: each entry trimmed, empty ones dropped; unset is the empty list. */
export const commaList = () =>
  z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    );

/** Settings every service reads. Defaults work on a developer machine with the standard ports. */
export const BaseConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/skald'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(50).default(5),
  /**
   * Postgres connections a process keeps open while idle (at most `DATABASE_POOL_SIZE`): they are
   * never closed for idleness, so a quiet spell does not cost a new backend (a fork, and every
   * prepared statement parsed again) when work resumes.
   */
  DATABASE_POOL_MIN: z.coerce.number().int().min(0).max(50).default(1),
  /**
   * How long a connection above `DATABASE_POOL_MIN` may sit idle before it is closed; 0 never
   * closes one. Connections are reused last-in first-out, so only those a burst opened wait here.
   */
  DATABASE_POOL_IDLE_MS: z.coerce.number().int().min(0).default(60_000),
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  NATS_USER: z.string().optional(),
  NATS_PASSWORD: z.string().optional(),
  NATS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Grace period for draining on SIGTERM. */
  SKALD_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(20_000),
  /** Instance name in logs and NATS connection names; defaults to host + pid. */
  SKALD_INSTANCE: z.string().optional(),
  /**
   * OpenTelemetry: the OTLP collector's base URL (e.g. http://otel-collector:4318); set, every app
   * exports traces there (`/v1/traces`); unset, tracing is off and costs nothing. The other standard
   * `OTEL_*` variables (protocol, headers, sampler, batch, resource) are read by the SDK as they are.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** An alias of `OTEL_EXPORTER_OTLP_ENDPOINT` (which wins when both are set). */
  SKALD_OTLP_ENDPOINT: z.string().url().optional(),
  /**
   * The bearer token that reads the app's `/metrics` (Prometheus' scrape credential, the same for all five apps;
   * `node scripts/gen-secrets.js` makes one). It opens `/metrics` only; on the gateway an admin's token does too.
   * Unset: only a trusted loopback peer (below) reads it.
   */
  SKALD_METRICS_TOKEN: z.string().min(32, 'SKALD_METRICS_TOKEN must be at least 32 characters').optional(),
  /**
   * `on`: a loopback peer reads `/metrics` without a token (a Prometheus on the same host, local use). Off by
   * default and in the production manifests: loopback may be another process of the host or pod.
   */
  SKALD_METRICS_TRUST_LOOPBACK: z.enum(['on', 'off']).default('off'),
});
export type BaseConfig = z.infer<typeof BaseConfigSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment with the app's schema; every problem is named by its variable. */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
}

/** A URL with its password replaced, for logs and banners. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable url)';
  }
}
