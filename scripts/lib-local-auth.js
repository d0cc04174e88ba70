'use strict';
// Per-service credentials for `npm start`, as in production (libs/contracts/src/access.ts): a NATS server of
// its own whose users are the five apps, and Redis ACL users for the two apps that use Redis.
// (Postgres roles: `node libs/persistence/dist/cli.js roles`.)
const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { forEachLine, tcpReachable } = require('./lib-services');

const ROOT = path.resolve(__dirname, '..');
/** The built contracts library (its types are those of its sources). */
const contracts = () =>
  /** @type {typeof import('../libs/contracts/src')} */ (require(path.join(ROOT, 'libs', 'contracts', 'dist')));
const secret = () => crypto.randomBytes(18).toString('base64url');

/**
 * The nats-server binary: SKALD_NATS_BIN, else the first nats-server on PATH or in /usr/sbin.
 * @param {NodeJS.ProcessEnv} env
 */
function natsBinary(env) {
  if (env.SKALD_NATS_BIN) return fs.existsSync(env.SKALD_NATS_BIN) ? env.SKALD_NATS_BIN : null;
  const dirs = [...(env.PATH || '').split(path.delimiter), '/usr/sbin', '/usr/local/bin'];
  return dirs.map((d) => path.join(d, 'nats-server')).find((p) => fs.existsSync(p)) || null;
}

/**
 * Starts nats-server on 127.0.0.1:`port` with one user per app (fresh passwords each start) and an operator user
 * `skald-ops` for the `nats` CLI (password kept in `<state>/nats-ops-password`). Resolves to the child process and
 * each app's NATS_USER / NATS_PASSWORD.
 * @param {{ bin: string, port: number, state: string, onLine: import('./lib-stack').OnLine }} options
 */
async function startLocalNats({ bin, port, state, onLine }) {
  const { SKALD_SERVICES, natsAuthorizationBlock } = contracts();
  const passwords = Object.fromEntries(SKALD_SERVICES.map((s) => [s, secret()]));
  const opsFile = path.join(state, 'nats-ops-password');
  if (!fs.existsSync(opsFile)) fs.writeFileSync(opsFile, secret(), { mode: 0o600 });
  const ops = fs.readFileSync(opsFile, 'utf8').trim();
  const dir = path.join(state, 'nats');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const conf = path.join(dir, 'nats.conf');
  fs.writeFileSync(
    conf,
    [
      `listen: "127.0.0.1:${port}"`,
      natsAuthorizationBlock((s) => passwords[s], [{ user: 'skald-ops', password: ops }]),
    ].join('\n'),
    { mode: 0o600 },
  );
  // One OS thread for the server's goroutines unless told otherwise: the stack shares the machine's
  // cores, and idle Go threads spinning for work were a third of the server's CPU (docs/performance.md).
  const child = spawn(bin, ['-c', conf], {
    // Its own process group: Ctrl-C in the terminal reaches the apps, and NATS stops after they drained.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GOMAXPROCS: process.env.SKALD_NATS_GOMAXPROCS ?? process.env.GOMAXPROCS ?? '1' },
  });
  for (const stream of [child.stdout, child.stderr])
    forEachLine(
      stream,
      (/** @type {string} */ l) => /\[(ERR|WRN|FTL)\]/.test(l) && !/Plaintext passwords/.test(l) && onLine(l),
    );
  for (let i = 0; i < 100 && child.exitCode === null; i++) {
    if (await tcpReachable('127.0.0.1', port, 500)) {
      const env = Object.fromEntries(SKALD_SERVICES.map((s) => [s, { NATS_USER: s, NATS_PASSWORD: passwords[s] }]));
      return { child, env, url: `nats://127.0.0.1:${port}` };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`nats-server did not start on 127.0.0.1:${port} (is the port taken? set SKALD_NATS_PORT)`);
}

/**
 * Each app's NATS credentials on a NATS server the operator runs (NATS_URL set): the users of
 * k8s/base/infra/nats.conf, passwords from NATS_PASSWORD_<APP>. Null when none is set (anonymous).
 * @param {NodeJS.ProcessEnv} env
 */
function externalNatsEnv(env) {
  const { SKALD_SERVICES, serviceSecretVar } = contracts();
  const vars = SKALD_SERVICES.map((s) => /** @type {const} */ ([s, env[serviceSecretVar('NATS_PASSWORD', s)]]));
  if (vars.every(([, p]) => !p)) return null;
  const missing = vars.filter(([, p]) => !p).map(([s]) => serviceSecretVar('NATS_PASSWORD', s));
  if (missing.length > 0) throw new Error(`set every NATS_PASSWORD_<APP> or none; missing: ${missing.join(', ')}`);
  return Object.fromEntries(vars.map(([s, p]) => [s, { NATS_USER: s, NATS_PASSWORD: p }]));
}

/**
 * The Redis key prefix variables of the install `instance`'s apps: those set in `env`, else the install's own.
 * @param {NodeJS.ProcessEnv} env
 * @param {string} instance
 */
function redisPrefixEnv(env, instance) {
  const own = contracts().redisKeyPrefixes(instance);
  return {
    SKALD_BULL_PREFIX: env.SKALD_BULL_PREFIX || own.bullPrefix,
    SKALD_LLM_HEALTH_PREFIX: env.SKALD_LLM_HEALTH_PREFIX || own.llmHealthPrefix,
    SKALD_LOGIN_LIMIT_PREFIX: env.SKALD_LOGIN_LIMIT_PREFIX || own.loginLimitPrefix,
  };
}

/**
 * Creates (or resets) the Redis ACL users of the apps that use Redis (REDIS_SERVICES) of the install `instance`
 * through the admin connection REDIS_URL, with passwords kept in `<state>/redis-passwords.json`. The user names and
 * key prefixes carry the install's name (`<instance>-gateway`, `<instance>:login:…`), so installs sharing a Redis
 * server never touch each other's; SKALD_BULL_PREFIX, SKALD_LLM_HEALTH_PREFIX and SKALD_LOGIN_LIMIT_PREFIX override
 * the prefixes. Returns each app's REDIS_URL and key prefix variables.
 * @param {{ adminUrl: string, state: string, env: NodeJS.ProcessEnv, instance: string }} options
 */
async function provisionRedisUsers({ adminUrl, state, env, instance }) {
  const Redis = /** @type {typeof import('ioredis').default} */ (require(path.join(ROOT, 'node_modules', 'ioredis')));
  const { REDIS_SERVICES, redisAclRules, redisUser } = contracts();
  const prefixEnv = redisPrefixEnv(env, instance);
  const prefixes = {
    bullPrefix: prefixEnv.SKALD_BULL_PREFIX,
    llmHealthPrefix: prefixEnv.SKALD_LLM_HEALTH_PREFIX,
    loginLimitPrefix: prefixEnv.SKALD_LOGIN_LIMIT_PREFIX,
  };
  const file = path.join(state, 'redis-passwords.json');
  /** @type {Record<string, string>} */
  const saved = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  for (const s of REDIS_SERVICES) saved[s] ||= secret();
  fs.writeFileSync(file, JSON.stringify(saved), { mode: 0o600 });
  const admin = new Redis(adminUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await admin.connect();
    /** @type {Record<string, Record<string, string>>} */
    const out = {};
    for (const s of REDIS_SERVICES) {
      await admin.call('ACL', 'SETUSER', redisUser(s, instance), 'reset', ...redisAclRules(s, saved[s], prefixes));
      const u = new URL(adminUrl);
      u.username = redisUser(s, instance);
      u.password = saved[s];
      out[s] = { REDIS_URL: u.toString(), ...prefixEnv };
    }
    return out;
  } finally {
    admin.disconnect();
  }
}

module.exports = { natsBinary, startLocalNats, externalNatsEnv, provisionRedisUsers, redisPrefixEnv };
