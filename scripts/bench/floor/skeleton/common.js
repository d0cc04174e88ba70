'use strict';
// Shared by the skeleton's processes (scripts/bench/floor/skeleton/README in index.js): the same
// client libraries Skald uses (`nats`, `pg`, `ws`, `openai`), nothing else — no Nest, no zod, no
// TypeORM, no logger, no metrics. Each process reads its settings from SKEL_* variables, connects,
// prints `ready` on stdout, and exits on SIGTERM.
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../../../..');
const req = (m) => require(path.join(ROOT, 'node_modules', m));
const { connect } = req('nats');

/** A NATS connection as Skald's apps open one (loopback, no TLS), named after the process. */
function natsConnect(name) {
  return connect({ servers: process.env.SKEL_NATS_URL, name: `skeleton-${name}`, maxReconnectAttempts: -1 });
}

const enc = (x) => Buffer.from(JSON.stringify(x));

/** Runs `main`, prints `ready` when it resolves, exits on SIGTERM (after `stop`) or on an error. */
function run(main) {
  main().then(
    (stop) => {
      process.stdout.write('ready\n');
      process.once('SIGTERM', () => {
        void Promise.resolve(stop?.()).finally(() => process.exit(0));
      });
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

module.exports = { ROOT, req, natsConnect, enc, run };
