/**
 * The unit project's rule, enforced: a unit spec starts no process, opens no network connection
 * and changes no file outside os.tmpdir() nor any file of the checkout. While a spec file runs, the
 * child_process functions, socket connects and listens, UDP sockets and the file system's writing
 * calls (write, append, mkdir, rm, rename, copy, link, chmod, open for writing — callback, sync and
 * promise forms) throw an error naming the rule, unless the path is under os.tmpdir() and outside
 * the checkout (a clone in /tmp is under os.tmpdir() too), or in the run's `test-results/`; and since code under test may catch that error, each test that made
 * such a call fails afterwards too. Reading files stays allowed (fixtures, docs, source).
 *
 * A test that needs a process, the network or real files belongs in the integration project:
 * name it `*.integration-spec.ts` (jest.config.js). Within a unit spec, fake the dependency or
 * work under a directory made with fs.mkdtempSync(path.join(os.tmpdir(), …)).
 */
// Default imports: the modules themselves. A namespace import is a copy made at import time
// (the CommonJS interop), and patching a copy would guard nothing.
import childProcess from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const UNIT_RULE =
  'unit specs start no process, open no network connection and change no file outside os.tmpdir() nor in the checkout; ' +
  'fake the dependency, or move the test to the integration project (rename it *.integration-spec.ts)';

export class UnitIsolationError extends Error {
  constructor(what: string) {
    super(`${what}: ${UNIT_RULE}`);
    this.name = 'UnitIsolationError';
  }
}

type AnyFn = (...args: unknown[]) => unknown;
interface Patch {
  target: Record<string, unknown>;
  name: string;
  original: unknown;
}

/** Where a unit spec may write, and the checkout it may not write to (wherever it lies). */
export interface WritablePlaces {
  /** os.tmpdir(), as given and resolved. */
  tmp: string[];
  /** The repository checkout, as found and resolved: refused even when it lies under `tmp`. */
  checkout: string[];
  /** The run's own reports, `test-results/` of the checkout (Jest's `--outputFile`, the attack suite's figures). */
  reports: string[];
}

const CHECKOUT = path.resolve(__dirname, '../..');
const both = (p: string): string[] => [...new Set([path.resolve(p), path.resolve(safeRealpath(p))])];
const PLACES: WritablePlaces = {
  tmp: both(os.tmpdir()),
  checkout: both(CHECKOUT),
  reports: both(path.join(CHECKOUT, 'test-results')),
};

function safeRealpath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

function asPath(p: unknown): string | null {
  if (typeof p === 'string') return p;
  if (Buffer.isBuffer(p)) return p.toString();
  if (p instanceof URL) return p.protocol === 'file:' ? decodeURIComponent(p.pathname) : null;
  return null; // a file descriptor: checked where it was opened
}

/**
 * `/proc/self/fd/<n>/…` (how the workspace jail reaches below a directory it holds open) names
 * the path of that descriptor: read the link to judge where it lands.
 */
function throughDescriptor(abs: string): string {
  const m = /^\/proc\/self\/fd\/(\d+)(\/.*)?$/.exec(abs);
  if (!m) return abs;
  try {
    return path.join(fs.readlinkSync(`/proc/self/fd/${m[1]}`), m[2] ?? '');
  } catch {
    return abs;
  }
}

const within = (abs: string, root: string): boolean => abs === root || abs.startsWith(root + path.sep);

/** Whether a unit spec may change `p`: the run's reports, or under os.tmpdir() and outside the checkout. */
export function writable(p: string, places: WritablePlaces = PLACES): boolean {
  const abs = throughDescriptor(path.resolve(p));
  if (places.reports.some((r) => within(abs, r))) return true;
  if (places.checkout.some((r) => within(abs, r))) return false;
  return places.tmp.some((r) => within(abs, r));
}

/** open() flags that can change the file. */
function writes(flags: unknown): boolean {
  if (flags === undefined || flags === null) return false;
  if (typeof flags === 'number') {
    const { O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND } = fs.constants;
    return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) !== 0;
  }
  return typeof flags === 'string' && /[wa+]/.test(flags);
}

let violations: string[] = [];
const patches: Patch[] = [];

function refuse(what: string): never {
  violations.push(what);
  throw new UnitIsolationError(what);
}

/** Replaces `target[name]` by a function that runs `check` first; a promise API's refusal is a rejection. */
function wrap(target: object, name: string, check: (args: unknown[]) => void, promises = false): void {
  const t = target as Record<string, unknown>;
  const original = t[name];
  if (typeof original !== 'function') return;
  const fn = original as AnyFn;
  const guarded = function (this: unknown, ...args: unknown[]): unknown {
    if (!promises) check(args);
    else
      try {
        check(args);
      } catch (e) {
        const refused = e instanceof Error ? e : new UnitIsolationError('a refused call');
        return Promise.reject(refused);
      }
    return fn.apply(this, args);
  };
  Object.defineProperties(guarded, {
    name: { value: fn.name },
    length: { value: fn.length },
  });
  // promisify(fs.x) and friends look up the custom form on the function itself.
  for (const key of Object.getOwnPropertySymbols(fn))
    (guarded as unknown as Record<symbol, unknown>)[key] = (fn as unknown as Record<symbol, unknown>)[key];
  patches.push({ target: t, name, original });
  t[name] = guarded;
}

/** The file-system calls that change a path (argument indexes of the paths they change). */
const FS_WRITES: Record<string, number[]> = {
  writeFile: [0],
  appendFile: [0],
  mkdir: [0],
  mkdtemp: [0],
  rm: [0],
  rmdir: [0],
  unlink: [0],
  rename: [0, 1],
  copyFile: [1],
  cp: [1],
  symlink: [1],
  link: [1],
  truncate: [0],
  chmod: [0],
  chown: [0],
  lchown: [0],
  utimes: [0],
  lutimes: [0],
  createWriteStream: [0],
};

const WHERE = 'outside os.tmpdir() or in the checkout';

function checkPaths(call: string, indexes: number[]) {
  return (args: unknown[]) => {
    for (const i of indexes) {
      const p = asPath(args[i]);
      if (p !== null && !writable(p)) refuse(`fs.${call}(${JSON.stringify(p)}) ${WHERE}`);
    }
  };
}

function checkOpen(call: string, flagsAt: number) {
  return (args: unknown[]) => {
    const p = asPath(args[0]);
    if (p !== null && writes(args[flagsAt]) && !writable(p))
      refuse(`fs.${call}(${JSON.stringify(p)}, ${JSON.stringify(args[flagsAt])}) ${WHERE}`);
  };
}

function install(): void {
  for (const [name, indexes] of Object.entries(FS_WRITES)) {
    wrap(fs, name, checkPaths(name, indexes));
    wrap(fs, `${name}Sync`, checkPaths(`${name}Sync`, indexes));
    wrap(fs.promises, name, checkPaths(`promises.${name}`, indexes), true);
  }
  wrap(fs, 'open', checkOpen('open', 1));
  wrap(fs, 'openSync', checkOpen('openSync', 1));
  wrap(fs.promises, 'open', checkOpen('promises.open', 1), true);

  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'])
    wrap(childProcess, name, (args) => refuse(`child_process.${name}(${JSON.stringify(args[0])})`));

  // Every TCP, TLS, HTTP(S) client and every Unix-socket client connects through net.Socket.
  wrap(net.Socket.prototype, 'connect', (args) => refuse(`a socket connect (${describeEndpoint(args[0], args[1])})`));
  wrap(net.Server.prototype, 'listen', (args) => refuse(`a server listen (${describeEndpoint(args[0], args[1])})`));
  wrap(dgram, 'createSocket', (args) => refuse(`dgram.createSocket(${JSON.stringify(args[0])})`));
}

function describeEndpoint(a: unknown, b: unknown): string {
  const first: unknown = Array.isArray(a) ? a[0] : a; // net's internal normalized-arguments form
  const text = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
  if (first && typeof first === 'object') {
    const o = first as { host?: unknown; port?: unknown; path?: unknown };
    if (o.path !== undefined) return text(o.path);
    return `${text(o.host) || 'localhost'}:${text(o.port)}`;
  }
  return b === undefined ? text(first) : `${text(b)}:${text(first)}`;
}

function uninstall(): void {
  for (const p of patches.splice(0).reverse()) p.target[p.name] = p.original;
}

install();

/** The refused calls of the running test, forgotten (for the guard's own spec). */
export function takeRefusals(): string[] {
  const seen = violations;
  violations = [];
  return seen;
}

afterEach(() => {
  const seen = takeRefusals();
  if (seen.length > 0)
    throw new UnitIsolationError(`this test made ${seen.length} refused call(s): ${seen.join('; ')}`);
});

afterAll(() => {
  uninstall();
});
