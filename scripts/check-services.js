#!/usr/bin/env node
'use strict';
// Exits 1 naming each of Postgres / Redis that cannot be reached, with its start command (NATS: the tests start a
// private nats-server when none answers at NATS_URL; test/setup/global-setup.js).
const { unreachableServices } = require('./lib-services');

void unreachableServices().then((down) => {
  for (const s of down)
    console.error(`${s.name} is not reachable at ${s.where} (${s.env}). Start it with:\n    ${s.start}`);
  process.exit(down.length > 0 ? 1 : 0);
});
