import type { IncomingMessage } from 'node:http';
import { hostname } from 'node:os';

/**
 * What the OpenTelemetry SDK of an app is set to, from the standard `OTEL_*` variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/) with
 * `SKALD_OTLP_ENDPOINT` as an alias of `OTEL_EXPORTER_OTLP_ENDPOINT`.
 */
export interface TelemetrySettings {
  /** False: no SDK, no instrumentation is loaded (the API's no-op tracer runs, nothing is paid). */
  enabled: boolean;
  /** Why it is off, or where spans go (for the start-up log line). */
  reason: string;
  /** Variables to set before the SDK reads the environment (the alias, made standard). */
  env: Record<string, string>;
}

type Env = Record<string, string | undefined>;

/**
 * On when an OTLP endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, or the
 * alias `SKALD_OTLP_ENDPOINT`) or `OTEL_TRACES_EXPORTER` names an exporter; off with
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Without any of them traces stay off
 * (the SDK's own default would send to localhost:4318).
 */
export function telemetrySettings(env: Env): TelemetrySettings {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    return { enabled: false, reason: 'OTEL_SDK_DISABLED=true', env: {} };
  }
  if (exporter === 'none') return { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none', env: {} };
  const standard = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const alias = env.SKALD_OTLP_ENDPOINT;
  const extra: Record<string, string> = {};
  if (!standard && alias) extra.OTEL_EXPORTER_OTLP_ENDPOINT = alias.replace(/\/+$/, '');
  if (!standard && !alias && !exporter) {
    return { enabled: false, reason: 'no OTEL_EXPORTER_OTLP_ENDPOINT (or SKALD_OTLP_ENDPOINT)', env: {} };
  }
  const where = standard || extra.OTEL_EXPORTER_OTLP_ENDPOINT || `OTEL_TRACES_EXPORTER=${exporter}`;
  return { enabled: true, reason: where, env: extra };
}

/** The started SDK of this process. */
export interface TracingHandle {
  /** Flushes what is buffered and stops exporting (at shutdown). */
  shutdown(): Promise<void>;
  /** Where spans go (for the start-up log line). */
  readonly target: string;
}

/** Endpoints whose requests make no span: probes and scrapes would fill every trace store. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The URL attributes of a server span without the query string (a query may carry a token or a
 * file path): `http.target` / `http.url` (the default, old HTTP conventions) and `url.query` (with
 * `OTEL_SEMCONV_STABILITY_OPT_IN=http` or `http/dup`). Returned by the HTTP instrumentation's
 * start hook, whose attributes win over its own.
 */
export function redactedUrlAttributes(req: Pick<IncomingMessage, 'url' | 'headers'>, env: Env): Record<string, string> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if (q < 0) return {};
  const path = url.slice(0, q) || '/';
  const optIn = (env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '').split(',').map((s) => s.trim());
  const stable = optIn.includes('http') || optIn.includes('http/dup');
  const old = !optIn.includes('http');
  return {
    ...(old ? { 'http.target': path, 'http.url': `http://${req.headers.host ?? 'localhost'}${path}` } : {}),
    ...(stable ? { 'url.query': 'REDACTED' } : {}),
  };
}

let started: TracingHandle | null = null;
let startedFor: string | null = null;

/**
 * Starts the OpenTelemetry Node SDK for `service` when the environment asks for traces
 * ({@link telemetrySettings}): OTLP export as the `OTEL_*` variables say (endpoint, protocol,
 * headers, sampler, batch), W3C trace context, and spans for HTTP (server and client), Postgres
 * (`pg`) and Redis (`ioredis`); NATS hops and LLM calls make their own spans through the API.
 * Must run before those modules load: each app's `main` imports its `instrument` module first.
 * Idempotent. Off, nothing of the SDK is even loaded.
 */
export function startTelemetry(service: string, env: Env = process.env): TracingHandle | null {
  if (startedFor !== null) return started;
  startedFor = service;
  const settings = telemetrySettings(env);
  if (!settings.enabled) return null;
  for (const [k, v] of Object.entries(settings.env)) process.env[k] = v;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } =
    require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win when set (the env detector); else the app's name
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: service }),
    resource: resourceFromAttributes({
      'service.namespace': 'skald',
      'service.instance.id': env.SKALD_INSTANCE ?? `${service}-${hostname()}-${process.pid}`,
    }),
    // Metrics are Prometheus' (`/metrics`), logs are stdout's: neither is exported unless asked for.
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
        startIncomingSpanHook: (req) => redactedUrlAttributes(req, env),
      }),
      // Only inside a trace: a sweep's or a pool's own queries start none.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      // The command only: its arguments are keys and values (a stream entry is a message body).
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  started = { shutdown: () => sdk.shutdown(), target: settings.reason };
  return started;
}

/** Whether {@link startTelemetry} ran in this process (on or off). */
export function telemetryStarted(): boolean {
  return startedFor !== null;
}

/** The SDK this process started ({@link startTelemetry}), or null when tracing is off. */
export function activeTelemetry(): TracingHandle | null {
  return started;
}
