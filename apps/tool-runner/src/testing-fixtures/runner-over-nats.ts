import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pino from 'pino';
import { Bus, NatsBus } from '@skald/messaging';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { PrivateNats, startPrivateNats } from './private-nats';

/** A tool runner app in this process on a NATS server of its own, and a client to call it. */
export interface RunnerOverNats {
  nats: PrivateNats;
  app: INestApplication;
  client: Bus;
  /** A fresh temporary directory; the users' workspaces are its `workspaces/`. */
  base: string;
  workspaces: string;
  stop(): Promise<void>;
}

/**
 * Starts a tool runner configured by `env` over the test database (pool of 2) and a private NATS
 * server; `stop()` drains the client, closes the app, stops NATS and removes the directory.
 */
export async function startRunnerOverNats(name: string, env: Record<string, string> = {}): Promise<RunnerOverNats> {
  const log = pino({ level: 'silent' });
  const nats = await startPrivateNats();
  const base = await mkdtemp(join(tmpdir(), `skald-${name}-`));
  // Searchable by the tenant uids of the rlimit mode (bwrap runs as one and binds by path).
  await chmod(base, 0o711);
  const workspaces = join(base, 'workspaces');
  const config = loadConfig(ToolRunnerConfigSchema, {
    DATABASE_URL: process.env.DATABASE_URL,
    DATABASE_POOL_SIZE: '2',
    NATS_URL: nats.url,
    SKALD_WORKSPACES: workspaces,
    // The sandbox's limits mode of the environment (SKALD_SANDBOX_CGROUPS=off: the rlimit fallback).
    ...(process.env.SKALD_SANDBOX_CGROUPS ? { SKALD_SANDBOX_CGROUPS: process.env.SKALD_SANDBOX_CGROUPS } : {}),
    ...env,
  });
  const app = await NestFactory.create(AppModule.register(config, log, `${name}-${process.pid}`), { logger: false });
  await app.init();
  const client = await NatsBus.connect({ servers: nats.url, name: `${name}-client-${process.pid}` }, log);
  return {
    nats,
    app,
    client,
    base,
    workspaces,
    async stop() {
      await client.drain();
      await app.close();
      await nats.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}
