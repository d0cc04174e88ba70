#!/usr/bin/env node
'use strict';
// The main job: `npm start`. Installs what is missing, builds, migrates, starts the five apps as
// separate processes with prefixed logs (and llm-sim when no LLM is configured). Ctrl-C stops all.
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { forEachLine, unreachableServices } = require('./lib-services');
const { externalNatsEnv, natsBinary, provisionRedisUsers, startLocalNats } = require('./lib-local-auth');

const ROOT = path.resolve(__dirname, '..');
const STATE = path.join(ROOT, '.skald');
const COLORS = {
  gateway: 36,
  'session-worker': 35,
  'approval-service': 33,
  'tool-runner': 32,
  scheduler: 34,
  'llm-sim': 90,
};
const tty = process.stdout.isTTY;
const paint = (name, text) => (tty ? `\x1b[${COLORS[name] || 37}m${text}\x1b[0m` : text);
const say = (msg) => console.log(paint('gateway', '[skald]'), msg);

function run(cmd, args, what) {
  say(`${what}…`);
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    console.error(`[skald] ${what} failed (exit ${r.status}).`);
    process.exit(r.status || 1);
  }
}

function persistent(file, make) {
  fs.mkdirSync(STATE, { recursive: true, mode: 0o700 });
  const p = path.join(STATE, file);
  if (!fs.existsSync(p)) fs.writeFileSync(p, make(), { mode: 0o600 });
  return fs.readFileSync(p, 'utf8').trim();
}

async function main() {
  // Without NATS_URL, npm start runs a NATS server of its own: its users are the five apps, each
  // allowed only its subjects (as in production); the machine's NATS needs no configuration for it.
  const ownNats = !process.env.NATS_URL;
  const down = (await unreachableServices()).filter((s) => !(ownNats && s.env === 'NATS_URL'));
  if (down.length > 0) {
    for (const s of down) {
      console.error(`[skald] ${s.name} is not reachable at ${s.where} (${s.env}). Start it with:\n    ${s.start}`);
    }
    process.exit(1);
  }
  const natsBin = ownNats ? natsBinary(process.env) : null;
  if (ownNats && !natsBin) {
    console.error(
      '[skald] nats-server is not installed (npm start runs its own, with a user per app). Install it with:\n' +
        '    apt-get install nats-server\n' +
        '  or set SKALD_NATS_BIN, or NATS_URL to a NATS server you run (users: k8s/base/infra/nats.conf).',
    );
    process.exit(1);
  }
  if (!fs.existsSync(path.join(ROOT, 'node_modules', '.package-lock.json')))
    run('npm', ['ci', '--no-audit', '--no-fund'], 'Installing dependencies');
  run('npm', ['run', 'build'], 'Building');

  const env = { ...process.env };
  env.DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/skald';
  env.REDIS_URL ||= 'redis://127.0.0.1:6379';
  env.SKALD_WORKSPACES ||= path.join(STATE, 'workspaces');
  env.SKALD_JWT_SECRET ||= persistent('jwt-secret', () => crypto.randomBytes(48).toString('base64url'));
  // Seals MCP credentials at rest; losing it makes stored credentials unreadable (re-enter them).
  env.SKALD_SECRETS_KEY ||= persistent('secrets-key', () => crypto.randomBytes(32).toString('base64'));
  let adminSource = 'SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD from your environment';
  if (!env.SKALD_ADMIN_EMAIL || !env.SKALD_ADMIN_PASSWORD) {
    env.SKALD_ADMIN_EMAIL ||= 'admin@skald.local';
    env.SKALD_ADMIN_PASSWORD ||= persistent('admin-password', () => crypto.randomBytes(12).toString('base64url'));
    adminSource = `email ${env.SKALD_ADMIN_EMAIL}, password in ${path.relative(ROOT, path.join(STATE, 'admin-password'))} (set SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD to choose)`;
  }
  const port = Number(env.PORT_GATEWAY || 8080);
  run('node', ['libs/persistence/dist/cli.js', 'up'], 'Migrating the database');
  // Each app connects as its own Postgres role, granted only its tables (issue 10): the admin URL
  // above migrates and provisions; passwords come from SKALD_DB_PASSWORD_* when set (trust
  // authentication on a developer machine needs none). No app sees the admin URL or another's password.
  run('node', ['libs/persistence/dist/cli.js', 'roles'], "Provisioning the services' database roles");
  const { serviceDatabaseUrl, servicePasswordEnv } = require(path.join(ROOT, 'libs/persistence/dist/service-roles'));
  const { SKALD_SERVICES: apps, REDIS_SERVICES } = require(path.join(ROOT, 'libs/contracts/dist'));

  // Per-app credentials: its Postgres role, its NATS user, and Redis ACL users for the session
  // worker and the scheduler (the other apps get no Redis credentials).
  const appEnv = {};
  for (const a of apps) {
    appEnv[a] = { DATABASE_URL: serviceDatabaseUrl(env.DATABASE_URL, a, env[servicePasswordEnv(a)]) };
    delete env[servicePasswordEnv(a)];
  }
  const children = [];
  let nats = null;
  let stopping = false;
  const shutdown = (code) => {
    if (stopping) return;
    stopping = true;
    say('stopping…');
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    const deadline = setTimeout(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    }, 25_000);
    Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r))))).then(
      async () => {
        clearTimeout(deadline);
        // NATS last: the apps drain through it.
        if (nats && nats.child.exitCode === null) {
          nats.child.kill('SIGTERM');
          await new Promise((r) => nats.child.once('exit', r));
        }
        say('stopped.');
        process.exit(code);
      },
    );
  };
  process.on('SIGINT', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  let natsBanner;
  if (ownNats) {
    const natsPort = Number(env.SKALD_NATS_PORT || 4223);
    nats = await startLocalNats({
      bin: natsBin,
      port: natsPort,
      state: STATE,
      onLine: (l) => console.log(paint('llm-sim', '[nats]'.padEnd(19)), l),
    });
    env.NATS_URL = nats.url;
    nats.child.on('exit', (code, signal) => {
      console.log(paint('llm-sim', '[nats]'.padEnd(19)), `exited (${signal || code})`);
      if (!stopping) shutdown(1);
    });
    process.on('exit', () => nats.child.exitCode === null && nats.child.kill('SIGKILL'));
    for (const a of apps) Object.assign(appEnv[a], nats.env[a]);
    natsBanner = `NATS:              ${nats.url} (npm start's own; a user per app; \`nats\` CLI: --user skald-ops --password "$(cat .skald/nats-ops-password)")`;
  } else {
    const creds = externalNatsEnv(env);
    if (creds) for (const a of apps) Object.assign(appEnv[a], creds[a]);
    natsBanner = creds
      ? `NATS:              ${env.NATS_URL} (a user per app, passwords from NATS_PASSWORD_<APP>)`
      : `NATS:              ${env.NATS_URL} — WARNING: anonymous; set NATS_PASSWORD_<APP> for per-app users (docs/operations.md)`;
  }
  let redisBanner;
  try {
    const redis = await provisionRedisUsers({
      adminUrl: env.REDIS_URL,
      state: STATE,
      env,
    });
    for (const [a, e] of Object.entries(redis)) Object.assign(appEnv[a], e);
    redisBanner = `Redis:             ACL users ${Object.keys(redis)
      .map((a) => `skald-${a}`)
      .join(', ')}, each reaching only its keys`;
  } catch (e) {
    for (const a of REDIS_SERVICES) appEnv[a].REDIS_URL = env.REDIS_URL;
    redisBanner = `Redis:             WARNING: could not create ACL users (${e.message}); the apps use REDIS_URL as given`;
  }
  delete env.REDIS_URL;

  const start = (name, script, extraEnv) => {
    const child = spawn(process.execPath, [script], {
      cwd: ROOT,
      env: { ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = paint(name, `[${name}]`.padEnd(19));
    for (const stream of [child.stdout, child.stderr]) forEachLine(stream, (l) => console.log(prefix, l));
    child.on('exit', (code, signal) => {
      console.log(prefix, `exited (${signal || code})`);
      if (!stopping) shutdown(1);
    });
    children.push(child);
    return child;
  };

  let llmBanner;
  if (!env.OPENAI_BASE_URL && !env.SKALD_LLM_CLIENTS) {
    const simPort = Number(env.LLM_SIM_PORT || 4010);
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

  start('approval-service', 'apps/approval-service/dist/main.js', { ...appEnv['approval-service'], PORT: '3102' });
  start('tool-runner', 'apps/tool-runner/dist/main.js', { ...appEnv['tool-runner'], PORT: '3103' });
  start('session-worker', 'apps/session-worker/dist/main.js', { ...appEnv['session-worker'], PORT: '3101' });
  start('scheduler', 'apps/scheduler/dist/main.js', { ...appEnv.scheduler, PORT: '3104' });
  start('gateway', 'apps/gateway/dist/main.js', { ...appEnv.gateway, PORT: String(port) });

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
  console.log(
    [
      '',
      '────────────────────────────────────────────────────────────────────────',
      `  Skald is running:  http://127.0.0.1:${port}   (the web client; API under /api, OpenAPI at /api/docs)`,
      `  Admin login:       ${adminSource}`,
      `  ${natsBanner}`,
      `  ${redisBanner}`,
      `  ${llmBanner}`,
      '  Ctrl-C stops everything.',
      '────────────────────────────────────────────────────────────────────────',
      '',
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error('[skald]', e);
  process.exit(1);
});
