#!/usr/bin/env node
import { ensureDatabase, migrateDown, migrateUp } from './data-source';

/** `node libs/persistence/dist/cli.js up|down [steps]` — DATABASE_URL names the database. */
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
  } else {
    console.error(`unknown command "${cmd}": use up or down [steps]`);
    process.exit(2);
  }
}

main().catch((e: unknown) => {
  console.error(JSON.stringify({ msg: 'migration failed', error: e instanceof Error ? e.message : String(e) }));
  process.exit(1);
});
