#!/usr/bin/env node
// The NATS server configuration of Compose and Kubernetes (k8s/base/infra/nats.conf), generated from the
// per-service permissions in libs/contracts/src/access.ts.
//
//   npm run build && node scripts/gen-service-auth.js     # rewrite the file
//   node scripts/gen-service-auth.js --check              # exit 1 when it is out of date (test/k8s runs this)
'use strict';

const { join } = require('node:path');
const { writeOrCheck } = require('./lib-generated');

const ROOT = join(__dirname, '..');
const NATS_CONF = join(ROOT, 'k8s', 'base', 'infra', 'nats.conf');

function natsConf() {
  return require(join(ROOT, 'libs', 'contracts', 'dist')).natsServerConfig();
}

if (require.main === module) {
  writeOrCheck(NATS_CONF, natsConf(), 'npm run build && node scripts/gen-service-auth.js');
}

module.exports = { natsConf, NATS_CONF };
