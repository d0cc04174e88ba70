#!/usr/bin/env node
'use strict';
// `npm run chaos [-- --seed N --duration S --conversations N]`: the long chaos run (test/chaos), by
// default 10 minutes with 20 conversations and a fresh seed. Builds first (unless
// SKALD_TEST_SKIP_BUILD=1), runs the chaos e2e spec alone, and ends with its figures line;
// `--seed` replays a run's faults and message kinds.
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { parseArgs } = require('node:util');

const ROOT = path.resolve(__dirname, '..');
const DEFAULTS = { duration: '600', conversations: '20' };

function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        seed: { type: 'string' },
        duration: { type: 'string', default: DEFAULTS.duration },
        conversations: { type: 'string', default: DEFAULTS.conversations },
      },
    }));
  } catch (e) {
    console.error(`${e.message}\nusage: npm run chaos -- [--seed N] [--duration SECONDS] [--conversations N]`);
    return 2;
  }
  /** @type {[keyof typeof values, number][]} */
  const minimums = [
    ['seed', 0],
    ['duration', 10],
    ['conversations', 1],
  ];
  for (const [name, min] of minimums) {
    const v = values[name];
    if (v !== undefined && !(/^\d+$/.test(v) && Number(v) >= min && Number.isSafeInteger(Number(v)))) {
      console.error(`--${name} must be an integer ≥ ${min}, got "${v}"`);
      return 2;
    }
  }
  const env = {
    ...process.env,
    CHAOS_DURATION_S: values.duration,
    CHAOS_CONVERSATIONS: values.conversations,
    ...(values.seed !== undefined ? { CHAOS_SEED: values.seed } : {}),
  };
  const jest = spawnSync(
    'npx',
    ['jest', 'test/e2e/chaos.e2e-spec.ts', '--selectProjects', 'e2e', '--runInBand', '--forceExit'],
    { cwd: ROOT, env, stdio: 'inherit' },
  );
  return jest.status ?? 1;
}

process.exitCode = main();
