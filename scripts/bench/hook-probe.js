'use strict';
// Whether V8's promise hooks are on in a process, by Node's public API: a promise reaction job runs
// with executionAsyncId() 0 while no hook (AsyncLocalStorage, async_hooks.createHook) is enabled,
// and with an id once one is. Preload it into the stack's apps and read the verdicts afterwards:
//
//   node scripts/bench/turn.js --quick --no-thousand \
//     --env NODE_OPTIONS=--require=$PWD/scripts/bench/hook-probe.js --env SKALD_HOOK_PROBE_DIR=/tmp/probe
//
// Every 2 s each process appends `<time> <script> promise hooks on|off` to <dir>/<pid>.txt.
const { executionAsyncId } = require('node:async_hooks');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.SKALD_HOOK_PROBE_DIR;
if (dir) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${process.pid}.txt`);
  const script = process.argv[1] ? path.relative(process.cwd(), process.argv[1]) : '-e';
  const probe = () =>
    new Promise((resolve) => setImmediate(() => void Promise.resolve().then(() => resolve(executionAsyncId()))));
  setInterval(() => {
    void probe().then((id) =>
      fs.appendFileSync(file, `${new Date().toISOString()} ${script} promise hooks ${id === 0 ? 'off' : 'on'}\n`),
    );
  }, 2_000).unref();
}
