'use strict';
// Reachability of Postgres and Redis for the test setup. NATS is not among them: `npm test` and `npm start` both use
// the NATS at NATS_URL when it answers and otherwise run a private nats-server (plain NATS, no JetStream), so
// each needs only the nats-server binary (scripts/lib-local-auth.js, natsBinary).
const net = require('node:net');

const SERVICES = [
  {
    name: 'PostgreSQL',
    env: 'DATABASE_URL',
    url: 'postgres://postgres@127.0.0.1:5432/skald',
    defaultPort: 5432,
    start: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  },
  {
    name: 'Redis',
    env: 'REDIS_URL',
    url: 'redis://127.0.0.1:6379',
    defaultPort: 6379,
    start:
      'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --maxmemory-policy noeviction',
  },
];

/**
 * @param {string} host
 * @param {number} port
 */
function tcpReachable(host, port, timeoutMs = 1500) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (/** @type {boolean} */ ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Returns the services that cannot be reached, each with the command that starts it. */
async function unreachableServices(env = process.env) {
  const down = [];
  for (const s of SERVICES) {
    const u = new URL(env[s.env] || s.url);
    const ok = await tcpReachable(u.hostname, Number(u.port) || s.defaultPort);
    if (!ok) down.push({ ...s, where: `${u.hostname}:${Number(u.port) || s.defaultPort}` });
  }
  return down;
}

/**
 * Calls `onLine` with each complete line a child process writes to `stream`.
 * @param {import('node:stream').Readable} stream
 * @param {(line: string) => void} onLine
 */
function forEachLine(stream, onLine) {
  let buf = '';
  stream.on('data', (/** @type {Buffer | string} */ d) => {
    buf += String(d);
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) onLine(l);
  });
}

module.exports = { SERVICES, unreachableServices, tcpReachable, forEachLine };
