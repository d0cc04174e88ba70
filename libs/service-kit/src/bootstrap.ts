import 'reflect-metadata';
import { INestApplication, LoggerService } from '@nestjs/common';
import type { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'pino';
import { z } from 'zod';
import { ConfigError, loadConfig } from './config';
import { createLogger, flushLogs, instanceName } from './logger';
import { JSON_LIMITS } from './bounded-json';
import { verifyJsonBody } from './json-body';
import type { Registry } from 'prom-client';
import { httpTelemetry } from './http-telemetry';
import { METRICS_REGISTRY, Readiness } from './ops';
import { startTelemetry, telemetryStarted, TracingHandle } from './telemetry';

/** Nest's own log lines, as JSON through pino. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Logger) {}
  log(message: unknown, context?: string): void {
    this.pino.debug({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.pino.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.pino.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.pino.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.pino.trace({ context }, String(message));
  }
}

/** What Nest boots: the app's root module (`AppModule.register(...)`). */
type RootModule = Parameters<typeof NestFactory.create>[0];

export interface ServiceBootstrap {
  service: string;
  module: RootModule;
  port: number;
  host: string;
  log: Logger;
  graceMs: number;
  /** Called before Nest closes: stop taking work, finish or hand back what runs. */
  drain?: (app: INestApplication) => Promise<void>;
  /** Exported traces to flush before exiting. */
  tracing?: TracingHandle | null;
  /** Extra wiring on the HTTP server (the gateway's WebSocket upgrade). */
  configure?: (app: INestApplication) => Promise<void> | void;
}

/**
 * The Nest app on Express as every service serves it. Routing is case-sensitive and strict: a
 * route matches only its own spelling (`/API/x`, `/api/x/`, `/api//x` are 404), so that no
 * variant of a path reaches a handler by another name. Authentication never depends on it: each
 * app's guard decides by the route's metadata (`@Public()`).
 */
export async function createHttpApp(module: RootModule, log: Logger): Promise<NestExpressApplication> {
  // Nest's application factory and the Express adapter load with the first app, not with every
  // importer of this library (a unit spec that needs a logger or a config loader).
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when an app is built */
  const { NestFactory: Factory } = require('@nestjs/core') as typeof import('@nestjs/core');
  const { ExpressAdapter } = require('@nestjs/platform-express') as typeof import('@nestjs/platform-express');
  // Express (a dependency of @nestjs/platform-express) ships no types here; these settings must be
  // made before the adapter exists, because the adapter's first middleware creates the router.
  const express = require('express') as () => { set(setting: string, value: boolean): unknown };
  /* eslint-enable @typescript-eslint/no-require-imports */
  const server = express();
  server.set('case sensitive routing', true);
  server.set('strict routing', true);
  const app = await Factory.create<NestExpressApplication>(module, new ExpressAdapter(server), {
    logger: new PinoNestLogger(log),
    bodyParser: false,
    abortOnError: false,
  });
  // First, so that a request refused by the body parser is logged and counted too.
  app.use(httpTelemetry(log, metricsRegistryOf(app)));
  app.useBodyParser('json', { limit: JSON_LIMITS.maxBytes, verify: verifyJsonBody });
  app.disable('x-powered-by');
  return app;
}

/** The app's Prometheus registry (OpsModule's), or null in an app built without it. */
function metricsRegistryOf(app: INestApplication): Registry | null {
  try {
    return app.get<Registry>(METRICS_REGISTRY, { strict: false });
  } catch {
    return null;
  }
}

/**
 * Starts a Nest app on its port, and on SIGTERM / SIGINT: marks it not ready, drains within the
 * grace period, closes, exits 0. A failure at start-up exits 1 with the reason in the log.
 */
export async function bootstrapService(opts: ServiceBootstrap): Promise<INestApplication> {
  const { log } = opts;
  guardProcess(log);
  let app: INestApplication;
  try {
    app = await createHttpApp(opts.module, log);
    await opts.configure?.(app);
    await app.listen(opts.port, opts.host);
  } catch (e) {
    log.fatal({ err: e instanceof Error ? e.message : String(e) }, 'failed to start');
    await flushLogs();
    process.exit(1);
  }
  const url = await app.getUrl();
  log.info({ url: url.replace('[::1]', '127.0.0.1') }, `${opts.service} listening`);

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'draining');
    app.get(Readiness, { strict: false })?.startDraining();
    const timer = setTimeout(() => {
      log.error({ graceMs: opts.graceMs }, 'drain exceeded the grace period; exiting');
      process.exit(1);
    }, opts.graceMs + 5_000);
    timer.unref();
    try {
      await opts.drain?.(app);
      await app.close();
      await opts.tracing?.shutdown().catch(() => undefined);
      log.info({}, 'stopped');
      await flushLogs();
      process.exit(0);
    } catch (e) {
      log.error({ err: e instanceof Error ? e.message : String(e) }, 'error while stopping');
      await flushLogs();
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return app;
}

let guarded = false;

/**
 * A promise rejection nobody handled is a bug in one request's or message's handler: it is logged
 * at error level and the process serves on. An uncaught exception leaves the process in an unknown
 * state: it is logged (fatal) and Node's default (exit 1, the orchestrator restarts) stands.
 */
export function guardProcess(log: Logger): void {
  if (guarded) return;
  guarded = true;
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason instanceof Error ? reason.message : String(reason) }, 'unhandled promise rejection');
  });
  process.on('uncaughtExceptionMonitor', (err) => {
    log.fatal({ err: err.message }, 'uncaught exception');
  });
}

/** The settings every app's configuration schema has (BaseConfigSchema plus PORT and HOST). */
export interface ServiceSettings {
  LOG_LEVEL: string;
  SKALD_INSTANCE?: string;
  SKALD_SHUTDOWN_GRACE_MS: number;
  SKALD_OTLP_ENDPOINT?: string;
  PORT: number;
  HOST: string;
}

export interface RunServiceOptions<C extends ServiceSettings> {
  service: string;
  schema: z.ZodType<C>;
  /** The app's root module, built from its validated configuration. */
  module: (config: C, log: Logger, instance: string) => RootModule;
  drain?: (app: INestApplication, config: C) => Promise<void>;
  configure?: (app: INestApplication, config: C, log: Logger) => Promise<void> | void;
}

/**
 * An app's `main`: validate the environment (a bad value is named and the process exits 1),
 * create the logger with the instance name, start the app, drain on SIGTERM.
 */
export function runService<C extends ServiceSettings>(opts: RunServiceOptions<C>): void {
  const start = async (): Promise<void> => {
    const config = loadConfig(opts.schema);
    const instance = instanceName(opts.service, config.SKALD_INSTANCE);
    const log = createLogger(opts.service, config.LOG_LEVEL, instance);
    // Started by the app's `instrument` module before anything loaded; here only if it was not.
    const preloaded = telemetryStarted();
    const tracing = startTelemetry(opts.service);
    if (tracing) log.info({ endpoint: tracing.target }, 'exporting traces (OpenTelemetry, OTLP)');
    if (tracing && !preloaded) {
      log.warn({}, 'tracing started after the app loaded: HTTP, Postgres and Redis spans may be missing');
    }
    await bootstrapService({
      tracing,
      service: opts.service,
      module: opts.module(config, log, instance),
      port: config.PORT,
      host: config.HOST,
      log,
      graceMs: config.SKALD_SHUTDOWN_GRACE_MS,
      drain: opts.drain ? (app) => (opts.drain as NonNullable<typeof opts.drain>)(app, config) : undefined,
      configure: opts.configure
        ? (app) => (opts.configure as NonNullable<typeof opts.configure>)(app, config, log)
        : undefined,
    });
  };
  start().catch((e: unknown) => {
    console.error(e instanceof ConfigError ? e.message : e);
    process.exit(1);
  });
}
