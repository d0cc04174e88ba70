#!/usr/bin/env node
import path from 'node:path';
import { parseArgs } from 'node:util';
import { backup, pruneBackups, restore } from './backup';
import { ensureDatabase, migrateDown, migrateUp } from './data-source';
import { MIGRATIONS } from './migrations';
import {
  instanceOf,
  provisionServiceRoles,
  schemaWaitingFor,
  servicePasswordEnv,
  servicePasswordsFromEnv,
  SKALD_SERVICES,
  type SkaldService,
} from './service-roles';

/** How long `wait` waits at most by default, and between two looks. */
const WAIT_MAX_SECS = 600;
const WAIT_POLL_MS = 2000;

/** The workspaces root of `backup` and `restore`: the tool runner's SKALD_WORKSPACES. */
function workspacesRoot(): string {
  const root = process.env.SKALD_WORKSPACES;
  if (!root) throw new Error("set SKALD_WORKSPACES to the workspaces root (the tool runner's)");
  return path.resolve(root);
}

/**
 * `node libs/persistence/dist/cli.js up|down [steps]|roles|wait <app> [max-secs]|backup --out <file> [--keep n]|
 * restore <file> [--secrets-out <file>]` — DATABASE_URL names the database (as its admin). `backup` writes one
 * archive (database, workspaces, sealed secrets; docs/operations.md, "Backup and restore"); `restore` puts one into
 * an empty install. `roles` (re)provisions the services' Postgres roles (named after the install: SKALD_INSTANCE_NAME,
 * else the database): run it after every `up`. `wait <app>` (with the
 * app's own DATABASE_URL) returns once every migration of this release is applied and the app's grants are in
 * place: a pod's init step during an upgrade, while the migration Job runs (at most max-secs, 600 by default).
 */
async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald';
  const [cmd = 'up', steps = '1'] = process.argv.slice(2);
  if (cmd === 'up') {
    if (await ensureDatabase(url))
      console.log(JSON.stringify({ msg: 'database created', database: new URL(url).pathname.slice(1) }));
    const applied = await migrateUp(url);
    console.log(JSON.stringify({ msg: 'migrations applied', applied }));
  } else if (cmd === 'down') {
    await migrateDown(url, Number(steps));
    console.log(JSON.stringify({ msg: 'migrations reverted', steps: Number(steps) }));
  } else if (cmd === 'roles') {
    const passwords = servicePasswordsFromEnv(process.env);
    const instance = instanceOf(url, process.env);
    const result = await provisionServiceRoles(url, passwords, undefined, instance);
    console.log(JSON.stringify({ msg: 'service roles provisioned', instance, ...result }));
    const missing = SKALD_SERVICES.filter((s) => !passwords[s]);
    if (missing.length > 0)
      console.log(
        JSON.stringify({
          msg:
            'roles without a password from the environment keep the one they have, or none: fine with trust ' +
            'authentication on a developer machine, refused by scram-sha-256 / md5 authentication in production',
          set: missing.map(servicePasswordEnv),
        }),
      );
  } else if (cmd === 'wait') {
    const service = process.argv[3] as SkaldService;
    if (!SKALD_SERVICES.includes(service)) {
      console.error(`wait needs the app: one of ${SKALD_SERVICES.join(', ')}`);
      process.exit(2);
    }
    const maxSecs = process.argv[4] === undefined ? WAIT_MAX_SECS : Number(process.argv[4]);
    if (!Number.isFinite(maxSecs) || maxSecs < 0) {
      console.error('max-secs must be a number of seconds');
      process.exit(2);
    }
    const names = MIGRATIONS.map((m) => m.name);
    const deadline = Date.now() + maxSecs * 1000;
    let last = '';
    for (;;) {
      const waiting = await schemaWaitingFor(url, service, names).catch((e: unknown) => [
        `the database (${e instanceof Error ? e.message : String(e)})`,
      ]);
      if (waiting.length === 0) break;
      if (waiting.join() !== last) console.log(JSON.stringify({ msg: 'waiting for the schema', waiting }));
      last = waiting.join();
      // The loop's bound: the deadline.
      if (Date.now() > deadline) throw new Error(`schema not ready after ${maxSecs} s: ${waiting.join('; ')}`);
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    }
    console.log(JSON.stringify({ msg: 'schema ready', service }));
  } else if (cmd === 'backup') {
    const { values } = parseArgs({
      args: process.argv.slice(3),
      options: { out: { type: 'string' }, keep: { type: 'string' } },
    });
    if (!values.out) throw new Error('backup needs --out <file>');
    const keep = values.keep === undefined ? undefined : Number(values.keep);
    if (keep !== undefined && !(Number.isInteger(keep) && keep >= 1)) throw new Error('--keep needs a count ≥ 1');
    const manifest = await backup({
      databaseUrl: url,
      workspaces: workspacesRoot(),
      out: values.out,
      env: process.env,
    });
    console.log(
      JSON.stringify({
        msg: 'backup written',
        file: values.out,
        migrations: manifest.migrations.length,
        schema: manifest.migrations.at(-1),
        secrets: manifest.secrets,
      }),
    );
    if (keep !== undefined) {
      const deleted = await pruneBackups(path.dirname(path.resolve(values.out)), keep);
      if (deleted.length > 0) console.log(JSON.stringify({ msg: 'old backups deleted', deleted }));
    }
  } else if (cmd === 'restore') {
    const { values, positionals } = parseArgs({
      args: process.argv.slice(3),
      options: { 'secrets-out': { type: 'string' } },
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new Error('restore needs the archive: restore <file> [--secrets-out <file>]');
    const result = await restore({
      archive: positionals[0],
      databaseUrl: url,
      workspaces: workspacesRoot(),
      secretsOut: values['secrets-out'],
      env: process.env,
    });
    console.log(
      JSON.stringify({
        msg: 'backup restored',
        database: new URL(url).pathname.slice(1),
        createdAt: result.manifest.createdAt,
        applied: result.applied,
        ...(values['secrets-out'] ? { secrets: values['secrets-out'] } : {}),
      }),
    );
  } else {
    console.error(
      `unknown command "${cmd}": use up, down [steps], roles, wait <app> [max-secs], backup --out <file> or restore <file>`,
    );
    process.exit(2);
  }
}

main().catch((e: unknown) => {
  console.error(
    JSON.stringify({ msg: `${process.argv[2] ?? 'up'} failed`, error: e instanceof Error ? e.message : String(e) }),
  );
  process.exit(1);
});
