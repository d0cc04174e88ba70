#!/usr/bin/env node
'use strict';
// The main job: `npm start`. Installs what is missing, builds, migrates, starts the five apps as
// separate processes with prefixed logs (and llm-sim when no LLM is configured). Ctrl-C stops all.
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { forEachLine, tcpReachable } = require('./lib-services');
const { startViteDev, startWatch } = require('./lib-watch');
const {
  externalNatsEnv,
  natsBinary,
  provisionRedisUsers,
  redisPrefixEnv,
  startLocalNats,
} = require('./lib-local-auth');
const {
  APP_PORTS,
  appPort,
  urlProblems,
  ensureBinaries,
  ensurePostgres,
  ensureRedis,
  natsPlan,
  passwordHint,
  shown,
  sparePort,
  stopOwn,
} = require('./lib-stack');

const ROOT = path.resolve(__dirname, '..');
// `npm run dev` (--watch): rebuild and restart what changed (scripts/lib-watch.js).
const WATCH = process.argv.includes('--watch');
// SKALD_STATE_DIR moves it (tests run a whole stack of their own).
const STATE = path.resolve(process.env.SKALD_STATE_DIR || path.join(ROOT, '.skald'));
/** @type {Record<string, number>} */
const COLORS = {
  gateway: 36,
  'session-worker': 35,
  'approval-service': 33,
  'tool-runner': 32,
  scheduler: 34,
  'llm-sim': 90,
};
const tty = process.stdout.isTTY;
const paint = (/** @type {string} */ name, /** @type {string} */ text) =>
  tty ? `\x1b[${COLORS[name] || 37}m${text}\x1b[0m` : text;
const say = (/** @type {string} */ msg) => console.log(paint('gateway', '[skald]'), msg);

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {string} what
 */
function run(cmd, args, what, env = process.env) {
  say(`${what}…`);
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`[skald] ${what} failed (exit ${r.status}).`);
    process.exit(r.status || 1);
  }
}

/**
 * `npm ci` with progress (npm itself shows a spinner at most): a line counting the packages fetched against the
 * lockfile's, rewritten in place on a terminal, every 100 packages otherwise. npm's whole log (warnings such as
 * deprecations included) goes to `<state>/npm-ci.log`; its errors are printed, and the log's end when it fails.
 */
async function install() {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  // Packages for another platform (`os`, `cpu`: a list, or negations such as `!win32`) are not installed.
  const fits = (/** @type {string[]} */ list, /** @type {string} */ value) =>
    !list ||
    list.includes(value) ||
    (list.every((/** @type {string} */ x) => x.startsWith('!')) && !list.includes(`!${value}`));
  const total = Object.entries(lock.packages || {}).filter(
    ([k, v]) => k.startsWith('node_modules/') && !v.link && fits(v.os, process.platform) && fits(v.cpu, process.arch),
  ).length;
  fs.mkdirSync(STATE, { recursive: true, mode: 0o700 });
  const logFile = path.join(STATE, 'npm-ci.log');
  const log = fs.createWriteStream(logFile, { mode: 0o600 });
  say(`Installing dependencies (npm ci; about two minutes the first time; log in ${shown(logFile)})…`);
  const started = Date.now();
  const child = spawn('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=http'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A lockfile without `resolved` URLs makes npm read each package's registry document before its tarball.
  let documents = 0;
  let fetched = 0;
  let warnings = 0;
  const progress = () =>
    `  ${documents > 0 ? `${documents} package documents read, ` : ''}${fetched} of ${total} packages fetched` +
    ` (${Math.round((Date.now() - started) / 1000)} s)`;
  const ticker = tty ? setInterval(() => process.stdout.write(`\r${progress()}`), 500) : null;
  for (const stream of [child.stdout, child.stderr])
    forEachLine(stream, (/** @type {string} */ l) => {
      log.write(`${l}\n`);
      if (/ http fetch GET 2\d\d /.test(l)) {
        if (/\.tgz /.test(l)) fetched++;
        else documents++;
        if (!tty && (fetched + documents) % 200 === 0) console.log(progress());
      } else if (/^npm warn/i.test(l)) warnings++;
      else if (/^npm err/i.test(l)) console.error(l);
    });
  const code = await new Promise((r) => child.on('exit', (c, signal) => r(c ?? (signal ? 1 : 0))));
  if (ticker) clearInterval(ticker);
  if (tty) process.stdout.write(`\r${progress()}\n`);
  await new Promise((r) => log.end(r));
  if (code !== 0) {
    console.error(fs.readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n'));
    console.error(`[skald] Installing dependencies failed (exit ${code}); the whole log: ${shown(logFile)}`);
    process.exit(code || 1);
  }
  say(
    `Dependencies installed in ${Math.round((Date.now() - started) / 1000)} s` +
      (warnings > 0 ? ` (npm's ${warnings} notices, e.g. deprecated packages, are in ${shown(logFile)})` : ''),
  );
}

/**
 * @param {string} file
 * @param {() => string} make
 */
function persistent(file, make) {
  fs.mkdirSync(STATE, { recursive: true, mode: 0o700 });
  const p = path.join(STATE, file);
  if (!fs.existsSync(p)) fs.writeFileSync(p, make(), { mode: 0o600 });
  return fs.readFileSync(p, 'utf8').trim();
}

async function main() {
  const env = { ...process.env };
  /** @typedef {import('./lib-stack').OwnProcess} OwnProcess */
  /** @type {{ postgres: OwnProcess | null, redis: OwnProcess | null, nats: OwnProcess | null }} */
  const own = { postgres: null, redis: null, nats: null };
  const infraLine = (/** @type {string} */ name) => (/** @type {string} */ l) =>
    console.log(paint('llm-sim', `[${name}]`.padEnd(19)), l);
  // Private instances are killed with the start command whatever ends it (a crash included).
  process.on('exit', () => {
    for (const o of Object.values(own)) if (o && o.child.exitCode === null) o.child.kill(o.stopSignal || 'SIGTERM');
  });
  /** @type {import('node:child_process').ChildProcess[]} */
  const children = [];
  let stopping = false;
  const shutdown = (/** @type {string | number | null | undefined} */ code) => {
    if (stopping) return;
    stopping = true;
    say('stopping…');
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    const deadline = setTimeout(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    }, 25_000);
    void Promise.all(
      children.map((c) => (c.exitCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r)))),
    ).then(async () => {
      clearTimeout(deadline);
      // The backing services last: the apps drain through them.
      await Promise.all([stopOwn(own.nats), stopOwn(own.redis), stopOwn(own.postgres)]);
      say('stopped.');
      process.exit(code);
    });
  };
  process.on('SIGINT', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  const watchOwn = (/** @type {string} */ name, /** @type {OwnProcess} */ o) =>
    o.child.on('exit', (code, signal) => {
      console.log(paint('llm-sim', `[${name}]`.padEnd(19)), `exited (${signal || code})`);
      if (!stopping) shutdown(1);
    });
  const problems = urlProblems(env);
  if (problems.length > 0) {
    for (const p of problems) console.error(`[skald] ${p}`);
    process.exit(1);
  }
  // First: the private Postgres's binaries and the Postgres client come from node_modules.
  if (!fs.existsSync(path.join(ROOT, 'node_modules', '.package-lock.json'))) await install();
  let pg, redis, natsPlanned;
  try {
    natsPlanned = await natsPlan({ env, say });
    redis = { probe: env.REDIS_URL || 'redis://127.0.0.1:6379' };
    const redisUp = await tcpReachable(new URL(redis.probe).hostname, Number(new URL(redis.probe).port) || 6379);
    ensureBinaries(
      [...(natsPlanned.own && !natsBinary(env) ? ['nats-server'] : []), ...(redisUp ? [] : ['redis-server'])],
      { env, say },
    );
    pg = await ensurePostgres({ env, state: STATE, say, onLine: infraLine('postgres') });
    own.postgres = pg.own;
    if (pg.own) watchOwn('postgres', pg.own);
    redis = await ensureRedis({ env, state: STATE, say, onLine: infraLine('redis') });
    own.redis = redis.own;
    if (redis.own) watchOwn('redis', redis.own);
  } catch (e) {
    console.error(`[skald] ${e.message}`);
    process.exit(1);
  }
  env.DATABASE_URL = pg.url;
  env.REDIS_URL = redis.url;
  run('npm', ['run', 'build'], 'Building');

  env.SKALD_WORKSPACES ||= path.join(STATE, 'workspaces');
  env.SKALD_JWT_SECRET ||= persistent('jwt-secret', () => crypto.randomBytes(48).toString('base64url'));
  // Seals MCP credentials at rest; losing it makes stored credentials unreadable (re-enter them).
  env.SKALD_SECRETS_KEY ||= persistent('secrets-key', () => crypto.randomBytes(32).toString('base64'));
  // Signs Web Push requests (VAPID); browsers subscribe to its public key, so it stays across restarts.
  env.SKALD_VAPID_PRIVATE_KEY ||= persistent('vapid-private-key', () => {
    const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return /** @type {string} */ (privateKey.export({ format: 'jwk' }).d);
  });
  // Every app's /metrics needs this bearer token (loopback is not trusted: SKALD_METRICS_TRUST_LOOPBACK stays off).
  let metricsSource = 'SKALD_METRICS_TOKEN from your environment';
  if (!env.SKALD_METRICS_TOKEN) {
    env.SKALD_METRICS_TOKEN = persistent('metrics-token', () => crypto.randomBytes(32).toString('hex'));
    metricsSource = `bearer token in ${shown(path.join(STATE, 'metrics-token'))} (set SKALD_METRICS_TOKEN to choose)`;
  }
  let adminSource = 'SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD from your environment';
  if (!env.SKALD_ADMIN_EMAIL || !env.SKALD_ADMIN_PASSWORD) {
    env.SKALD_ADMIN_EMAIL ||= 'admin@skald.local';
    env.SKALD_ADMIN_PASSWORD ||= persistent('admin-password', () => crypto.randomBytes(12).toString('base64url'));
    adminSource = `email ${env.SKALD_ADMIN_EMAIL}, password in ${shown(path.join(STATE, 'admin-password'))} (set SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD to choose)`;
  }
  const port = appPort(env, 'gateway');
  const { serviceDatabaseUrl, servicePasswordEnv, serviceRoleName } =
    /** @type {typeof import('../libs/persistence/src/service-roles')} */ (
      require(path.join(ROOT, 'libs/persistence/dist/service-roles'))
    );
  const {
    SKALD_SERVICES: apps,
    REDIS_SERVICES,
    instanceName,
    redisUser,
  } = /** @type {typeof import('../libs/contracts/src')} */ (require(path.join(ROOT, 'libs/contracts/dist')));
  // The install's name (SKALD_INSTANCE_NAME, else the database's) is in its role, Redis user and key names: installs
  // sharing a Postgres cluster or a Redis server never overwrite each other's credentials or keys.
  let instance;
  try {
    instance = instanceName(env, env.DATABASE_URL);
  } catch (e) {
    console.error(`[skald] ${e.message}`);
    process.exit(1);
  }
  // Each app connects as its own Postgres role, granted only its tables: the admin URL above migrates and
  // provisions. Passwords: SKALD_DB_PASSWORD_<APP> when set, else generated once into the state directory, so
  // password authentication (scram-sha-256) works as well as trust. No app sees the admin URL or another's password.
  const migrate = spawnSync(process.execPath, ['libs/persistence/dist/cli.js', 'up'], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
  });
  process.stdout.write(migrate.stdout);
  process.stderr.write(migrate.stderr);
  if (migrate.status !== 0) {
    if (/password authentication failed|no pg_hba\.conf entry|28P01/.test(migrate.stderr + migrate.stdout))
      console.error(`[skald] ${passwordHint(env.DATABASE_URL)}`);
    console.error(`[skald] Migrating the database failed (exit ${migrate.status}).`);
    process.exit(migrate.status || 1);
  }
  const dbPasswordsFile = path.join(STATE, 'db-passwords.json');
  /** @type {Record<string, string>} */
  const dbPasswords = fs.existsSync(dbPasswordsFile) ? JSON.parse(fs.readFileSync(dbPasswordsFile, 'utf8')) : {};
  for (const a of apps) dbPasswords[a] ||= crypto.randomBytes(18).toString('base64url');
  fs.writeFileSync(dbPasswordsFile, JSON.stringify(dbPasswords), { mode: 0o600 });
  for (const a of apps) env[servicePasswordEnv(a)] ||= dbPasswords[a];
  run('node', ['libs/persistence/dist/cli.js', 'roles'], "Provisioning the services' database roles", env);

  // Per-app credentials: its Postgres role, its NATS user, and Redis ACL users for the session
  // worker and the scheduler (the other apps get no Redis credentials).
  /** @type {Record<string, NodeJS.ProcessEnv>} */
  const appEnv = {};
  for (const a of apps) {
    appEnv[a] = { DATABASE_URL: serviceDatabaseUrl(env.DATABASE_URL, a, env[servicePasswordEnv(a)], instance) };
    delete env[servicePasswordEnv(a)];
  }
  delete env.DATABASE_URL;
  let natsBanner;
  if (natsPlanned.own) {
    const natsPort = env.SKALD_NATS_PORT ? Number(env.SKALD_NATS_PORT) : await sparePort(path.join(STATE, 'nats-port'));
    const natsBin = natsBinary(env);
    if (natsBin === null)
      throw new Error('nats-server is not installed (SKALD_NATS_BIN, PATH, /usr/sbin, /usr/local/bin)');
    const nats = await startLocalNats({
      bin: natsBin,
      port: natsPort,
      state: STATE,
      onLine: infraLine('nats'),
    });
    own.nats = { ...nats, stopSignal: 'SIGTERM' };
    watchOwn('nats', own.nats);
    env.NATS_URL = nats.url;
    for (const a of apps) Object.assign(appEnv[a], nats.env[a]);
    natsBanner = `NATS:              ${nats.url} (npm start's own; a user per app; \`nats\` CLI: --user skald-ops --password "$(cat ${shown(path.join(STATE, 'nats-ops-password'))})")`;
  } else {
    const creds = externalNatsEnv(env);
    if (creds) for (const a of apps) Object.assign(appEnv[a], creds[a]);
    natsBanner = creds
      ? `NATS:              ${env.NATS_URL} (a user per app, passwords from NATS_PASSWORD_<APP>)`
      : `NATS:              ${env.NATS_URL} — WARNING: anonymous; set NATS_PASSWORD_<APP> for per-app users (docs/operations.md)`;
  }
  let redisBanner;
  try {
    const users = await provisionRedisUsers({ adminUrl: env.REDIS_URL, state: STATE, env, instance });
    for (const [a, e] of Object.entries(users)) Object.assign(appEnv[a], e);
    redisBanner = `${redis.banner ? `${redis.banner}\n  ` : ''}Redis:             ACL users ${REDIS_SERVICES.map((a) =>
      redisUser(a, instance),
    ).join(', ')}, each reaching only its keys`;
  } catch (e) {
    for (const a of REDIS_SERVICES)
      Object.assign(appEnv[a], { REDIS_URL: env.REDIS_URL, ...redisPrefixEnv(env, instance) });
    redisBanner = `Redis:             WARNING: could not create ACL users (${e.message}); the apps use REDIS_URL as given`;
  }
  delete env.REDIS_URL;

  // The running processes by name, for `npm run dev`'s restarts.
  const running = new Map();
  const start = (
    /** @type {string} */ name,
    /** @type {string} */ script,
    /** @type {NodeJS.ProcessEnv} */ extraEnv,
  ) => {
    const child = spawn(process.execPath, [script], {
      cwd: ROOT,
      env: { ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = paint(name, `[${name}]`.padEnd(19));
    for (const stream of [child.stdout, child.stderr]) forEachLine(stream, (l) => console.log(prefix, l));
    child.on('exit', (code, signal) => {
      console.log(prefix, `exited (${signal || code})`);
      const i = children.indexOf(child);
      if (i >= 0) children.splice(i, 1);
      if (running.get(name)?.restarting) {
        running.get(name).restarting = false;
        if (!stopping) start(name, script, extraEnv);
      } else if (!stopping) shutdown(1);
    });
    children.push(child);
    running.set(name, { child, restarting: false });
    return child;
  };
  /** Restarts one process (it drains on SIGTERM like at Ctrl-C); a second call while it stops is one restart. */
  const restart = (/** @type {string} */ name) => {
    const r = running.get(name);
    if (!r || r.restarting || stopping) return;
    r.restarting = true;
    r.child.kill('SIGTERM');
  };

  let llmBanner;
  if (!env.OPENAI_BASE_URL && !env.SKALD_LLM_CLIENTS) {
    // LLM_SIM_PORT, else a spare port (kept across starts while free, like NATS's).
    const simPort = env.LLM_SIM_PORT ? Number(env.LLM_SIM_PORT) : await sparePort(path.join(STATE, 'llm-sim-port'));
    start('llm-sim', 'libs/testing/dist/llm-sim/main.js', { PORT: String(simPort) });
    env.OPENAI_BASE_URL = `http://127.0.0.1:${simPort}/v1`;
    env.OPENAI_API_KEY = 'llm-sim';
    env.SKALD_LLM_MODEL = 'llm-sim';
    llmBanner = [
      `No LLM is configured, so llm-sim (a scripted stand-in) answers at ${env.OPENAI_BASE_URL}.`,
      'To use a real OpenAI-compatible endpoint, start with:',
      '    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… SKALD_LLM_MODEL=gpt-4.1-mini npm start',
    ].join('\n         ');
  } else {
    llmBanner = `LLM: ${env.SKALD_LLM_CLIENTS ? 'clients from SKALD_LLM_CLIENTS' : `${env.SKALD_LLM_MODEL || '(default model)'} at ${env.OPENAI_BASE_URL}`}`;
  }

  // `npm start` runs the apps as deployments do (docker-compose.yml, k8s, the image): NODE_ENV=production, where a
  // published NATS message is checked by its receivers only. `npm run dev` and a NODE_ENV you set keep the sender's
  // check too.
  env.NODE_ENV ||= WATCH ? 'development' : 'production';
  start('approval-service', 'apps/approval-service/dist/main.js', {
    ...appEnv['approval-service'],
    PORT: String(appPort(env, 'approval-service')),
  });
  start('tool-runner', 'apps/tool-runner/dist/main.js', {
    ...appEnv['tool-runner'],
    PORT: String(appPort(env, 'tool-runner')),
  });
  start('session-worker', 'apps/session-worker/dist/main.js', {
    ...appEnv['session-worker'],
    PORT: String(appPort(env, 'session-worker')),
  });
  start('scheduler', 'apps/scheduler/dist/main.js', { ...appEnv.scheduler, PORT: String(appPort(env, 'scheduler')) });
  // `npm run dev`: the gateway forwards the web client's requests to Vite's dev server (loopback only); `npm start`
  // never turns this on, whatever the environment says.
  delete env.SKALD_WEB_DEV_URL;
  /** @type {NodeJS.ProcessEnv} */
  const gatewayEnv = { ...appEnv.gateway, PORT: String(port) };
  if (WATCH) {
    const webDevPort = await sparePort(path.join(STATE, 'web-dev-port'));
    const vite = startViteDev(webDevPort, (src, l) => console.log(paint('llm-sim', `[${src}]`.padEnd(19)), l));
    children.push(vite);
    vite.on('exit', (code, signal) => {
      const i = children.indexOf(vite);
      if (i >= 0) children.splice(i, 1);
      console.log(paint('llm-sim', '[vite]'.padEnd(19)), `exited (${signal || code})`);
      if (!stopping) shutdown(1);
    });
    gatewayEnv.SKALD_WEB_DEV_URL = `http://127.0.0.1:${webDevPort}`;
  }
  start('gateway', 'apps/gateway/dist/main.js', gatewayEnv);

  // Banner once the gateway answers.
  for (let i = 0; i < 120 && !stopping; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  if (stopping) return;
  if (WATCH) {
    const apps = Object.fromEntries(Object.keys(APP_PORTS).map((a) => [a, `@skald/${a}`]));
    if (running.has('llm-sim')) apps['llm-sim'] = '@skald/testing';
    const watchers = startWatch({
      apps,
      restart,
      onLine: (src, l) => console.log(paint('llm-sim', `[${src}]`.padEnd(19)), l),
    });
    // Stopped with the apps: shutdown waits for every child.
    for (const w of watchers) {
      children.push(w);
      w.on('exit', () => !stopping && shutdown(1));
    }
  }
  console.log(
    [
      '',
      '────────────────────────────────────────────────────────────────────────',
      `  Skald is running:  http://127.0.0.1:${port}   (the web client; API under /api, OpenAPI at /api/docs, shown at /docs)`,
      `  Admin login:       ${adminSource}`,
      `  /metrics:          ${metricsSource}`,
      `  ${pg.banner}`,
      `  Install name:      ${instance} (Postgres roles ${serviceRoleName('gateway', instance)}, …; Redis users ${redisUser('gateway', instance)}, …; SKALD_INSTANCE_NAME to choose)`,
      `  ${natsBanner}`,
      `  ${redisBanner}`,
      `  ${llmBanner}`,
      WATCH
        ? "  Watching: tsc -b --watch restarts the apps whose code changed; Vite's dev server serves the web client behind\n  the gateway (edits reach the page by HMR). Ctrl-C stops everything."
        : '  Ctrl-C stops everything.',
      '────────────────────────────────────────────────────────────────────────',
      '',
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error('[skald]', e);
  process.exit(1);
});
