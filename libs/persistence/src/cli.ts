#!/usr/bin/env node
import { ensureDatabase, migrateDown, migrateUp } from './data-source';
import { provisionServiceRoles, servicePasswordEnv, servicePasswordsFromEnv, SKALD_SERVICES } from './service-roles';

/**
 * `node libs/persistence/dist/cli.js up|down [steps]|roles` — DATABASE_URL names the database (as
 * its admin). `roles` (re)provisions the services' Postgres roles: run it after every `up`.
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
    const result = await provisionServiceRoles(url, passwords);
    console.log(JSON.stringify({ msg: 'service roles provisioned', ...result }));
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
  } else {
    console.error(`unknown command "${cmd}": use up, down [steps] or roles`);
    process.exit(2);
  }
}

main().catch((e: unknown) => {
  console.error(
    JSON.stringify({ msg: `${process.argv[2] ?? 'up'} failed`, error: e instanceof Error ? e.message : String(e) }),
  );
  process.exit(1);
});
