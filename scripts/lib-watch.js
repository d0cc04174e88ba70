'use strict';
// `npm run dev`: TypeScript's incremental watch (`tsc -b --watch`) rebuilds what changed; after each of its
// compilations the apps whose code changed — their own dist or that of a workspace package they depend on — are
// restarted, and only those. The web client is served by Vite's dev server (startViteDev; the gateway forwards the
// page's requests to it, edits reach the browser by HMR).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { forEachLine } = require('./lib-services');

const ROOT = path.resolve(__dirname, '..');
/** The end of one `tsc --watch` compilation. */
const CYCLE_END = /Found (\d+) errors?\. Watching for file changes\./;
/** Packages whose `dist` is served, not run: the gateway reads the web client's files per request. */
const SERVED = new Set(['@skald/web']);

/** Directory of each workspace package, by name (`@skald/gateway` → apps/gateway). */
function workspacePackages(root = ROOT) {
  /** @type {Map<string, string>} */
  const out = new Map();
  for (const group of ['apps', 'libs']) {
    const dir = path.join(root, group);
    for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      const pkg = path.join(dir, name, 'package.json');
      if (fs.existsSync(pkg)) out.set(JSON.parse(fs.readFileSync(pkg, 'utf8')).name, path.join(dir, name));
    }
  }
  return out;
}

/**
 * The workspace packages `pkg` runs with: itself and its `@skald/*` dependencies, transitively.
 * @param {string} pkg
 */
function runtimeClosure(pkg, packages = workspacePackages()) {
  /** @type {Set<string>} */
  const seen = new Set();
  const todo = [pkg];
  while (todo.length > 0) {
    const name = /** @type {string} */ (todo.pop());
    const dir = packages.get(name);
    if (seen.has(name) || dir === undefined) continue;
    seen.add(name);
    const json = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    for (const dep of Object.keys(json.dependencies || {})) if (packages.has(dep) && !SERVED.has(dep)) todo.push(dep);
  }
  return seen;
}

/**
 * The newest modification time under `dir` (0 when it does not exist).
 * @param {string} dir
 */
function newestMtime(dir) {
  let newest = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const d = /** @type {string} */ (stack.pop());
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else newest = Math.max(newest, fs.statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? 0);
    }
  }
  return newest;
}

/**
 * Newest mtime of each workspace package's `dist`.
 * @param {Map<string, string>} packages
 */
function distSnapshot(packages) {
  return new Map([...packages].map(([name, dir]) => [name, newestMtime(path.join(dir, 'dist'))]));
}

/**
 * The packages whose `dist` changed between two snapshots.
 * @param {Map<string, number>} before
 * @param {Map<string, number>} after
 */
function changedPackages(before, after) {
  return [...after].filter(([name, t]) => t > (before.get(name) ?? 0)).map(([name]) => name);
}

/**
 * Starts the watchers. `apps` maps a process name to the workspace package it runs (`gateway` → `@skald/gateway`);
 * `restart(name)` restarts one; `onLine(source, line)` prints the watchers' output.
 * @param {{ apps: Record<string, string>, restart: (name: string) => void, onLine: (source: string, line: string) => void }} options
 */
function startWatch({ apps, restart, onLine }) {
  const packages = workspacePackages();
  const closures = new Map(Object.entries(apps).map(([name, pkg]) => [name, runtimeClosure(pkg, packages)]));
  let snapshot = distSnapshot(packages);
  const tsc = spawn(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-b',
      'tsconfig.build.json',
      '--watch',
      '--preserveWatchOutput',
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  for (const stream of [tsc.stdout, tsc.stderr])
    forEachLine(stream, (line) => {
      // eslint-disable-next-line no-control-regex -- ANSI escapes (ESC c clears the screen) are what is removed
      if (line.trim()) onLine('tsc', line.replace(/\x1bc|\x1b\[[0-9;]*[A-Za-z]/g, ''));
      if (!CYCLE_END.test(line)) return;
      const next = distSnapshot(packages);
      const changed = changedPackages(snapshot, next);
      snapshot = next;
      if (changed.length === 0) return;
      const hit = [...closures].filter(([, closure]) => changed.some((p) => closure.has(p))).map(([name]) => name);
      if (hit.length > 0) onLine('watch', `changed: ${changed.join(', ')}; restarting ${hit.join(', ')}`);
      for (const name of hit) restart(name);
    });
  return [tsc];
}

/**
 * Vite's dev server for the web client on a loopback port (apps/web/vite.config.ts reads SKALD_WEB_DEV_PORT).
 * @param {number} port
 * @param {(source: string, line: string) => void} onLine
 */
function startViteDev(port, onLine) {
  const vite = spawn(
    process.execPath,
    [path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), '--clearScreen', 'false'],
    {
      cwd: path.join(ROOT, 'apps', 'web'),
      env: { ...process.env, SKALD_WEB_DEV_PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const stream of [vite.stdout, vite.stderr])
    // eslint-disable-next-line no-control-regex -- ANSI escapes are what is removed
    forEachLine(stream, (line) => line.trim() && onLine('vite', line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')));
  return vite;
}

module.exports = {
  CYCLE_END,
  startViteDev,
  changedPackages,
  distSnapshot,
  runtimeClosure,
  startWatch,
  workspacePackages,
};
