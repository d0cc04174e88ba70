import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import pino from 'pino';
import { createHttpApp } from '@skald/service-kit';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../../apps/gateway/src/app.module';
import { GatewayConfigSchema } from '../../apps/gateway/src/config';
import { wireGateway } from '../../apps/gateway/src/gateway-app';

export interface InProcessGateway {
  app: INestApplication;
  url: string;
  close(): Promise<void>;
}

/** Settings several in-process gateway replicas share (the JWT key above all). */
export function gatewayEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test',
    DATABASE_POOL_SIZE: '3',
    LOG_LEVEL: 'silent',
    SKALD_JWT_SECRET: randomBytes(48).toString('base64url'),
    // Failed-login counters of these replicas only: the shared Redis's default prefix counts every
    // failure from 127.0.0.1 of any gateway on the machine against this test's logins.
    SKALD_LOGIN_LIMIT_PREFIX: `skald-it-${randomBytes(6).toString('hex')}:login:`,
    NATS_REQUEST_TIMEOUT_MS: '1000',
    ...overrides,
  };
}

/**
 * The gateway's Nest app built the way `main.ts` builds it (the same HTTP app factory, module
 * and wiring), listening on a loopback port (a free one unless given), against the real Postgres / NATS / Redis named
 * by `env`.
 */
export async function startGateway(env: Record<string, string>, name: string, port = 0): Promise<InProcessGateway> {
  const config = loadConfig(GatewayConfigSchema, env);
  const log = pino({ level: 'silent' });
  const app = await createHttpApp(AppModule.register(config, log, name), log);
  await wireGateway(app, log);
  await app.listen(port, '127.0.0.1');
  const bound = (app.getHttpServer().address() as AddressInfo).port;
  return { app, url: `http://127.0.0.1:${bound}`, close: () => app.close() };
}
