import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, release, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { recordAttackSuite } from '@skald/testing';
import { gateRunnerKnowledge } from '../../apps/approval-service/src/rules/command-match';
import { BwrapCommandRunner } from '../../apps/tool-runner/src/command/bwrap-command.runner';
import { CommandOutcome } from '../../apps/tool-runner/src/command/command-runner';
import { SANDBOX_PATH, shellQuote } from '../../apps/tool-runner/src/command/sandbox/bwrap-args';
import { ToolRunnerConfigSchema } from '../../apps/tool-runner/src/config';

/**
 * Wrappers are found by asking the system. Every executable the sandbox sees on
 * its PATH (`SANDBOX_PATH`: /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin, as the
 * sandbox resolves them) is run in the tool runner's own bubblewrap sandbox (`BwrapCommandRunner`:
 * the same options, mounts, syscall filter and limits as `execute_cmd`; no network, stdin
 * /dev/null) in the shapes below, each in a directory of its own holding a file `marker`. A program
 * whose shape deleted the marker, alone in a fresh sandbox and workspace, while the same shape with
 * a harmless command (`true marker` for `rm marker`: the decoy) did not, runs what it was given; it
 * must be known to the gate (`gateRunnerKnowledge`) as running a command (its inner command is
 * matched against deny rules) or as running code. The test fails when the image gains such a
 * program the gate does not know. Programs that delete `marker` under the decoy too (`gzip rm
 * marker` compresses it) act on their file arguments: they are listed, not wrappers.
 *
 * Bounds: each process has `CPU_SEC` CPU seconds (a spinning `yes` dies); a sandbox's cases end
 * when nothing in it has been runnable for `QUIET_SEC` (a server waiting in accept(), a prompt
 * waiting for a terminal), or once everything in it has been asleep for `WALL_SEC` in all without
 * ever being quiet that long (a program that wakes on a timer forever). Neither bound is shortened
 * by a loaded machine: a process waiting for a CPU is runnable, so it counts as neither quiet nor
 * asleep. `MAX_SEC` by the clock is the backstop (the runner kills bwrap, the pid namespace's init:
 * everything inside dies).
 *
 * Speed (CI budget ~3 min on 2 idle cores): `BATCH` programs share one sandbox, every shape of each
 * in its own directory with its own marker, `CONCURRENCY` sandboxes at a time. A program can harm
 * its siblings (`killall5`, `kill -1`, `pkill rm`): the batch is trusted only when its monitor
 * reached its end, its sentinel process is alive, and every case either finished without a signal
 * (other than the CPU bound's SIGXCPU/SIGKILL) or was still running when the batch ended; otherwise
 * each of its programs is swept again alone, in a sandbox of its own (`SKALD_WRAPPER_SWEEP_MODE=
 * individual` sweeps every program so: the design before batching, for comparison). Every shape that
 * deleted in the batch is confirmed alone in a fresh sandbox, with its decoy, as before.
 *
 * Memoised per image: what a full sweep found is kept outside the checkout (`SKALD_CACHE_DIR`, else
 * `$XDG_CACHE_HOME/skald`, else `~/.cache/skald`) under a fingerprint of everything its result
 * depends on — each executable on the PATH (path, size, mtime, inode), the package database, the
 * kernel, the uid, and the source of this harness and of the runner's sandbox. A later run with the
 * same fingerprint re-judges the kept findings against today's `gateRunnerKnowledge` (the gate is
 * what changes between commits) and sweeps for real a seeded random sample of programs
 * (`SPOT_RUNNERS` runners, `SPOT_OTHERS` others) and every program a bound cut short in the kept
 * sweep; any difference, any other fingerprint, or `SKALD_WRAPPER_SWEEP_CACHE=off` runs the full
 * sweep.
 */

jest.setTimeout(60 * 60_000);

interface Shape {
  /** The words after the program. */
  args: string[];
  /** Fed on stdin instead of /dev/null. */
  stdin?: string;
}

/** A shape that deletes `marker` when the program runs it, and its decoy that names `marker` harmlessly. */
const SHAPES: ReadonlyArray<{ shape: Shape; decoy: Shape }> = [
  { shape: { args: ['rm', 'marker'] }, decoy: { args: ['true', 'marker'] } },
  { shape: { args: ['--', 'rm', 'marker'] }, decoy: { args: ['--', 'true', 'marker'] } },
  { shape: { args: ['rm', '--', 'marker'] }, decoy: { args: ['true', '--', 'marker'] } },
  { shape: { args: ['-c', 'rm marker'] }, decoy: { args: ['-c', 'true marker'] } },
  { shape: { args: ['-c', 'unlink("marker")'] }, decoy: { args: ['-c', 'length("marker")'] } },
  {
    shape: { args: ['-c', 'import os; os.unlink("marker")'] },
    decoy: { args: ['-c', 'import os; os.path.exists("marker")'] },
  },
  { shape: { args: ['-e', 'unlink "marker"'] }, decoy: { args: ['-e', 'length "marker"'] } },
  {
    shape: { args: ['-e', 'require("fs").unlinkSync("marker")'] },
    decoy: { args: ['-e', 'require("fs").existsSync("marker")'] },
  },
  { shape: { args: ['-e', 'File.unlink "marker"'] }, decoy: { args: ['-e', 'File.exist? "marker"'] } },
  { shape: { args: ['-e', 'os.remove("marker")'] }, decoy: { args: ['-e', 'os.getenv("marker")'] } },
  { shape: { args: ['-r', 'unlink("marker");'] }, decoy: { args: ['-r', 'strlen("marker");'] } },
  { shape: { args: ['-ex', 'shell rm marker', '-batch'] }, decoy: { args: ['-ex', 'shell true marker', '-batch'] } },
  { shape: { args: ['-q', 'rm', 'marker'] }, decoy: { args: ['-q', 'true', 'marker'] } },
  { shape: { args: ['sh', '-c', 'rm marker'] }, decoy: { args: ['sh', '-c', 'true marker'] } },
  { shape: { args: ['-qc', 'rm marker', '/dev/null'] }, decoy: { args: ['-qc', 'true marker', '/dev/null'] } },
  { shape: { args: ['1', 'rm', 'marker'] }, decoy: { args: ['1', 'true', 'marker'] } },
  { shape: { args: ['--wait', 'rm', 'marker'] }, decoy: { args: ['--wait', 'true', 'marker'] } },
  { shape: { args: ['BEGIN{system("rm marker")}'] }, decoy: { args: ['BEGIN{system("true marker")}'] } },
  { shape: { args: ['.', '-exec', 'rm', 'marker', ';'] }, decoy: { args: ['.', '-exec', 'true', 'marker', ';'] } },
  { shape: { args: [], stdin: 'unlink "marker"\n' }, decoy: { args: [], stdin: 'length "marker"\n' } },
  { shape: { args: [], stdin: 'rm marker\n' }, decoy: { args: [], stdin: 'true marker\n' } },
  {
    shape: { args: [], stdin: 'import os; os.unlink("marker")\n' },
    decoy: { args: [], stdin: 'import os; os.path.exists("marker")\n' },
  },
  {
    shape: { args: [], stdin: 'require("fs").unlinkSync("marker")\n' },
    decoy: { args: [], stdin: 'require("fs").existsSync("marker")\n' },
  },
  { shape: { args: ['rm'], stdin: 'marker\n' }, decoy: { args: ['true'], stdin: 'marker\n' } },
];

/** Programs not run, with the reason: none. Each would be listed here and counted in the report. */
const EXCLUDED: ReadonlyArray<{ program: string; reason: string }> = [];

/** Deleting programs the harness must see, or it does not see deletions at all. */
const CANARIES = ['env', 'xargs', 'sh', 'perl', 'nice'];

const CPU_SEC = 1;
const QUIET_SEC = 1;
const WALL_SEC = 20;
const MAX_SEC = 300;
/** Sandboxes at a time: enough to keep both cores busy while others wait out QUIET_SEC. */
const CONCURRENCY = Number(process.env.SKALD_WRAPPER_SWEEP_CONCURRENCY ?? 4);
/** Programs per sandbox. */
const BATCH = Number(process.env.SKALD_WRAPPER_SWEEP_BATCH ?? 6);
/** Test-only: sweep just these base names (comma-separated; the canaries are then not required). */
const ONLY = process.env.SKALD_WRAPPER_SWEEP_ONLY?.split(',').filter(Boolean);

/** Programs swept for real on a cache hit, to catch a cache the fingerprint failed to invalidate. */
const SPOT_RUNNERS = 6;
const SPOT_OTHERS = 18;
/** Fingerprints kept (each a full sweep's findings, a few kB). */
const CACHE_KEEP = 4;
const CACHE_DIR = join(
  process.env.SKALD_CACHE_DIR ?? (process.env.XDG_CACHE_HOME || join(homedir(), '.cache')) + '/skald',
  'wrapper-sweep',
);
/** Sources whose text decides what a sweep finds: this harness and the runner's sandbox. */
const HARNESS_SOURCES = [
  __filename,
  join(__dirname, '../../apps/tool-runner/src/config.ts'),
  join(__dirname, '../../apps/tool-runner/src/command/bwrap-command.runner.ts'),
  join(__dirname, '../../apps/tool-runner/src/command/sandbox'),
];

/** One case as shell text, run in its directory. */
function caseScript(program: string, shape: Shape): string {
  const cmd = [program, ...shape.args].map(shellQuote).join(' ');
  return shape.stdin !== undefined ? `printf '%s' ${shellQuote(shape.stdin)} | ${cmd}` : `${cmd} </dev/null`;
}

/**
 * Cases at once, each `[dir, script]` in `/workspace/<dir>`; then the sandbox ends once no other
 * process is left, or none has been runnable (state R or D in /proc/PID/stat) for QUIET_SEC.
 */
function batchScript(cases: ReadonlyArray<readonly [string, string]>): string {
  // The sentinel (a sleep the harness never kills) must be alive at the end; each case writes its
  // status to `.rc` when it finishes, and its subshell's pid to `.pid`; at the end the monitor
  // writes, per case, `done` (finished), `running` (killed by the batch's end) or `vanished`.
  const lines = [
    `ulimit -t ${CPU_SEC}`,
    'cd /workspace || exit 125',
    `sleep ${MAX_SEC * 2} & sentinel=$!`,
    'echo $sentinel >.sentinel',
    // the MAX_SEC backstop, kept by the monitor (by the clock, /proc/uptime) so that it can report
    `read -r up _ </proc/uptime; deadline=$((\${up%.*} + ${MAX_SEC}))`,
  ];
  for (const [dir, script] of cases)
    lines.push(`(cd ${dir} && ${script}; echo $? >.rc) >/dev/null 2>&1 & echo $! >${dir}/.pid`);
  lines.push(
    'quiet=0 asleep=0',
    'while :; do',
    '  busy= active=',
    '  for p in /proc/[0-9]*; do',
    '    n=${p#/proc/}; [ "$n" = 1 ] || [ "$n" = $$ ] || [ "$n" = "$sentinel" ] || { read -r l 2>/dev/null <"$p/stat" || continue; l=${l##*) }',
    '      case $l in Z*) ;; R*|D*) busy=1 active=1; break;; *) busy=1;; esac; }',
    '  done',
    '  [ -n "$busy" ] || break',
    '  if [ -n "$active" ]; then quiet=0; else',
    `    quiet=$((quiet + 1)) asleep=$((asleep + 1)); [ $quiet -ge ${QUIET_SEC * 10} ] && break`,
    `    [ $asleep -lt ${WALL_SEC * 10} ] || { echo walled; break; }`,
    '  fi',
    '  read -r up _ </proc/uptime; [ "${up%.*}" -lt "$deadline" ] || { echo walled; break; }',
    '  sleep 0.1',
    'done',
    `for d in ${cases.map(([dir]) => dir).join(' ')}; do`,
    // builtins only (no fork per case: the report must not be starved on a loaded machine)
    '  if [ -f "$d/.rc" ]; then read -r rc <"$d/.rc"; echo "$d done $rc"',
    '  elif read -r pid <"$d/.pid" 2>/dev/null && [ -d "/proc/$pid" ]; then echo "$d running"',
    '  else echo "$d vanished"; fi',
    'done',
    '[ -d "/proc/$sentinel" ] && echo sentinel-alive',
    'echo monitor-end',
  );
  return lines.join('\n');
}

/**
 * Statuses a sibling's kill leaves (SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM: what
 * `killall5`, `kill -1`, `pkill` send). Not SIGHUP (129): git and its tools exit 129 on a usage
 * error; SIGKILL (137) and SIGXCPU (152) are the CPU bound's, SIGSYS the syscall filter's,
 * SIGSEGV/SIGABRT a program's own crash. A broadcast of any signal kills the sentinel.
 */
const SIBLING_KILL = new Set([130, 131, 138, 140, 142, 143]);

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The files under `path` (itself when a file), sorted. */
async function filesUnder(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const names = (await readdir(path)).sort();
  return (await Promise.all(names.map((n) => filesUnder(join(path, n))))).flat();
}

/**
 * What a sweep's result depends on, hashed: each executable swept (its host stat: the
 * sandbox binds the host's directories at the same paths), the package database, the kernel, the
 * uid (root sweeps in another limits mode), and the harness's and sandbox's source.
 */
async function imageFingerprint(programs: readonly string[]): Promise<string> {
  const h = createHash('sha256');
  for (const p of programs) {
    const st = await stat(p).catch(() => null);
    h.update(`${p}\0${st ? `${st.size}:${st.mtimeMs}:${st.ino}` : 'missing'}\n`);
  }
  const dpkg = await stat('/var/lib/dpkg/status').catch(() => null);
  h.update(`dpkg ${dpkg ? `${dpkg.size}:${dpkg.mtimeMs}` : 'none'}\nkernel ${release()}\nuid ${process.getuid?.()}\n`);
  for (const source of HARNESS_SOURCES)
    for (const file of await filesUnder(source)) h.update(`${basename(file)}\0`).update(await readFile(file));
  return h.digest('hex').slice(0, 32);
}

interface Found {
  program: string;
  /** Shapes (as shell text) that deleted the marker alone in a fresh sandbox while their decoy did not. */
  runs: string[];
  /** Shapes whose decoy deleted the marker too: the program acts on its file arguments. */
  actsOnFiles: string[];
  /** Shapes that deleted in the program's batch but not alone. */
  notReproduced: string[];
}

describe('wrappers of the sandbox image, found by running every executable', () => {
  const log = pino({ level: 'silent' });
  let runner: BwrapCommandRunner;
  let base: string;
  let seq = 0;

  beforeAll(async () => {
    try {
      execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error('bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap');
    }
    runner = new BwrapCommandRunner(
      ToolRunnerConfigSchema.parse({
        // a batch: BATCH programs × shapes, a few processes each
        SKALD_SANDBOX_PIDS: '4096',
        SKALD_SANDBOX_MEMORY: String(4 * 1024 ** 3),
        SKALD_SANDBOX_TMP_SIZE: String(8 * 1024 ** 2),
      }),
      log,
    );
    const status = await runner.init();
    if (!status.available) throw new Error(status.summary);
    base = await mkdtemp(join(tmpdir(), 'skald-wrapper-sweep-'));
    // Searchable by the tenant uids of the rlimit mode (bwrap runs as one and binds by path).
    await chmod(base, 0o711);
  });

  afterAll(async () => {
    await runner?.onApplicationShutdown();
    if (base) await rm(base, { recursive: true, force: true });
  });

  function run(ws: string, command: string, timeoutSec: number): Promise<CommandOutcome> {
    return runner.run({
      command,
      cwd: ws,
      virtualCwd: '/workspace',
      home: ws,
      timeoutSec,
      signal: new AbortController().signal,
    });
  }

  /**
   * Cases in one fresh sandbox, each in a directory with a marker (and one at the workspace root:
   * a program that went to $HOME before deleting). Which markers went, and whether it hit WALL_SEC or MAX_SEC.
   */
  async function runCases(
    cases: ReadonlyArray<string>,
  ): Promise<{ deleted: boolean[]; walled: boolean; walledCases: boolean[]; trusted: boolean }> {
    const ws = join(base, String(++seq));
    await mkdir(ws);
    await extraSetup?.(ws);
    await writeFile(join(ws, 'marker'), 'm');
    for (let k = 0; k < cases.length; k++) {
      await mkdir(join(ws, String(k)));
      await writeFile(join(ws, String(k), 'marker'), 'm');
    }
    // the monitor ends the cases; the runner's bound is a backstop (then: not trusted)
    const out = await run(ws, batchScript(cases.map((c, k) => [String(k), c] as const)), MAX_SEC + 60);
    const rootGone = !(await exists(join(ws, 'marker')));
    const deleted: boolean[] = [];
    for (let k = 0; k < cases.length; k++) deleted.push(rootGone || !(await exists(join(ws, String(k), 'marker'))));
    await rm(ws, { recursive: true, force: true });
    const killed = out.kind !== 'exited';
    // Trusted: the monitor ran to its end, the sentinel lived, no case vanished or died by a signal.
    const report = out.output.split('\n');
    const walled = killed || report.includes('walled');
    const walledCases = cases.map((_, k) => killed || (walled && report.includes(`${k} running`)));
    const trusted =
      !killed &&
      report.includes('monitor-end') &&
      report.includes('sentinel-alive') &&
      cases.every((_, k) => {
        const line = report.find((l) => l.startsWith(`${k} `));
        if (!line) return false;
        const [, state, rc] = line.split(' ');
        return state === 'running' || (state === 'done' && !SIBLING_KILL.has(Number(rc)));
      });
    if (!trusted && cases.length > SHAPES.length)
      untrustedWhy.push(
        killed
          ? `killed (${out.kind})`
          : report.filter((l) => / (vanished|done 1(3[01]|38|4[023]))$/.test(l) || !/^\d+ /.test(l)).join(';'),
      );
    return { deleted, walled, walledCases, trusted };
  }

  /** The executables on the sandbox's PATH, as it sees them (directories resolved, each once). */
  async function listExecutables(): Promise<string[]> {
    const ws = join(base, 'list');
    await mkdir(ws);
    const dirs = [...new Set(SANDBOX_PATH.split(':'))].map(shellQuote).join(' ');
    const out = await run(
      ws,
      `seen=; for d in ${dirs}; do r=$(cd -P "$d" 2>/dev/null && pwd -P) || continue; ` +
        'case " $seen " in *" $r "*) continue;; esac; seen="$seen $r"; ' +
        `for f in "$r"/*; do [ -f "$f" ] && [ -x "$f" ] && printf '%s\\n' "$f"; done; done`,
      60,
    );
    await rm(ws, { recursive: true, force: true });
    if (out.kind !== 'exited' || out.exitCode !== 0)
      throw new Error(`listing the sandbox's PATH failed: ${out.output}`);
    return out.output.split('\n').filter((l) => l.startsWith('/'));
  }

  /** Each shape that deleted in a screening run, confirmed alone and with its decoy alone. */
  async function confirm(program: string, deleted: readonly boolean[]): Promise<Found | null> {
    const found: Found = { program, runs: [], actsOnFiles: [], notReproduced: [] };
    for (let k = 0; k < SHAPES.length; k++) {
      if (!deleted[k]) continue;
      const text = caseScript(program, SHAPES[k].shape);
      const alone = await runCases([text]);
      const decoy = await runCases([caseScript(program, SHAPES[k].decoy)]);
      if (!alone.deleted[0]) found.notReproduced.push(text);
      else if (decoy.deleted[0]) found.actsOnFiles.push(text);
      else found.runs.push(text);
    }
    const any = found.runs.length + found.actsOnFiles.length + found.notReproduced.length > 0;
    return any ? found : null;
  }

  /** A program alone in its sandbox: its shapes together, then each deleting shape confirmed. */
  async function sweep(program: string): Promise<{ found: Found | null; walled: boolean }> {
    const screen = await runCases(SHAPES.map((s) => caseScript(program, s.shape)));
    return { found: await confirm(program, screen.deleted), walled: screen.walled };
  }

  const stats = { batches: 0, untrusted: 0 };
  /** Test of the harness only: files put in every sandbox's workspace (fake programs). */
  let extraSetup: ((ws: string) => Promise<void>) | null = null;
  /** Why batches were not trusted (in the report). */
  const untrustedWhy: string[] = [];

  /**
   * Programs together in one sandbox, every shape of each in its own directory; a batch that is not
   * trusted (see `runCases`) is swept again program by program.
   */
  async function sweepBatch(
    batch: readonly string[],
  ): Promise<Array<{ program: string; found: Found | null; walled: boolean }>> {
    stats.batches++;
    const screen = await runCases(batch.flatMap((p) => SHAPES.map((s) => caseScript(p, s.shape))));
    if (!screen.trusted) {
      stats.untrusted++;
      untrustedWhy.push(`batch ${batch.map((p) => basename(p)).join(' ')}`);
      const out = [];
      for (const program of batch) out.push({ program, ...(await sweep(program)) });
      return out;
    }
    const out = [];
    for (let b = 0; b < batch.length; b++) {
      const deleted = screen.deleted.slice(b * SHAPES.length, (b + 1) * SHAPES.length);
      const walled = screen.walledCases.slice(b * SHAPES.length, (b + 1) * SHAPES.length).some(Boolean);
      out.push({ program: batch[b], found: await confirm(batch[b], deleted), walled });
    }
    return out;
  }

  it('the harness finds a runner the gate does not know, also in a batch a sibling killed', async () => {
    // Fake programs on a path the sandbox sees (/workspace/.bin): one runs its arguments, one
    // kills every process it can (`kill -TERM -1`, as `killall5` would), one does nothing.
    extraSetup = async (ws) => {
      await mkdir(join(ws, '.bin'));
      await writeFile(join(ws, '.bin', 'skald-fake-runner'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
      await writeFile(join(ws, '.bin', 'skald-fake-killer'), '#!/bin/sh\nkill -TERM -1\n', { mode: 0o755 });
    };
    try {
      const before = stats.untrusted;
      const batch = ['/workspace/.bin/skald-fake-killer', '/workspace/.bin/skald-fake-runner', '/usr/bin/true'];
      const rs = await sweepBatch(batch);
      const runner = rs.find((r) => r.program.endsWith('skald-fake-runner'))?.found;
      expect(runner?.runs.length).toBeGreaterThan(0);
      expect(gateRunnerKnowledge(runner?.program ?? '')).toBeNull(); // the main test would fail on it
      expect(stats.untrusted).toBe(before + 1); // the killer's batch was re-run program by program
      expect(rs.find((r) => r.program === '/usr/bin/true')?.found).toBeNull();
    } finally {
      extraSetup = null;
    }
  });

  /** Sweeps `programs` with `CONCURRENCY` sandboxes at a time; what each found, and those walled. */
  async function sweepAll(programs: readonly string[]): Promise<{ found: Found[]; walled: string[] }> {
    const individual = process.env.SKALD_WRAPPER_SWEEP_MODE === 'individual';
    const found: Found[] = [];
    const walled: string[] = [];
    let next = 0;
    const size = individual ? 1 : BATCH;
    const worker = async (): Promise<void> => {
      while (next < programs.length) {
        const batch = programs.slice(next, next + size);
        next += batch.length;
        const rs = individual ? [{ program: batch[0], ...(await sweep(batch[0])) }] : await sweepBatch(batch);
        for (const r of rs) {
          if (r.walled) walled.push(basename(r.program));
          if (r.found) found.push(r.found);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, () => worker()));
    return { found, walled };
  }

  interface Kept {
    fingerprint: string;
    sweptAt: string;
    seconds: number;
    batches: number;
    untrusted: number;
    found: Found[];
    walled: string[];
  }

  /**
   * The kept sweep of this fingerprint if a seeded random sample of its programs and every program
   * the kept sweep cut short at a bound (`walled`: `netstat -c` wakes every second forever), swept
   * again now, agree with it (each runner among them still runs what it is given, no other does);
   * else null.
   */
  async function keptSweep(fingerprint: string, programs: readonly string[]): Promise<Kept | null> {
    if (process.env.SKALD_WRAPPER_SWEEP_CACHE === 'off') return null;
    const kept = await readFile(join(CACHE_DIR, `${fingerprint}.json`), 'utf8')
      .then((t) => JSON.parse(t) as Kept)
      .catch(() => null);
    if (kept?.fingerprint !== fingerprint) return null;
    const runners = kept.found.filter((f) => f.runs.length > 0).map((f) => f.program);
    const inFound = new Set(kept.found.map((f) => f.program));
    const others = programs.filter((p) => !inFound.has(p));
    const seed = Number(process.env.SKALD_WRAPPER_SWEEP_SEED ?? Date.now() % 2 ** 31);
    const pick = (from: string[], n: number): string[] =>
      fc.sample(
        fc.shuffledSubarray(from, { minLength: Math.min(n, from.length), maxLength: Math.min(n, from.length) }),
        {
          seed,
          numRuns: 1,
        },
      )[0];
    const spotRunners = pick(runners, SPOT_RUNNERS);
    const spotOthers = pick(others, SPOT_OTHERS);
    const walledThen = programs.filter((p) => kept.walled.includes(basename(p)));
    const checked = [...new Set([...spotRunners, ...spotOthers, ...walledThen])];
    const now = await sweepAll(checked);
    const ranThen = new Set(runners);
    const runsNow = new Set(now.found.filter((f) => f.runs.length > 0).map((f) => f.program));
    const differ = checked
      .filter((p) => ranThen.has(p) !== runsNow.has(p))
      .map((p) => `${basename(p)} ${ranThen.has(p) ? 'no longer runs' : 'now runs'} its arguments`);
    process.stdout.write(
      `wrapper sweep: kept result of ${kept.sweptAt} (fingerprint ${fingerprint}); spot check seed=${seed} ` +
        `of ${spotRunners.length} runners, ${spotOthers.length} others and the ${walledThen.length} cut short then: ` +
        `${differ.length === 0 ? 'agrees' : `differs (${differ.join('; ')}): sweeping all`}\n`,
    );
    return differ.length === 0 ? kept : null;
  }

  async function keep(kept: Kept): Promise<void> {
    await mkdir(CACHE_DIR, { recursive: true });
    await writeFile(join(CACHE_DIR, `${kept.fingerprint}.json`), JSON.stringify(kept));
    const files = await readdir(CACHE_DIR);
    const dated = await Promise.all(
      files.map(async (f) => ({ f, t: (await stat(join(CACHE_DIR, f)).catch(() => null))?.mtimeMs ?? 0 })),
    );
    dated.sort((a, b) => b.t - a.t);
    for (const { f } of dated.slice(CACHE_KEEP)) await rm(join(CACHE_DIR, f), { force: true });
  }

  it('every program that runs what it is given is known to the gate as running a command or code', async () => {
    const started = performance.now();
    stats.batches = 0;
    stats.untrusted = 0;
    untrustedWhy.length = 0;
    const excluded = new Set(EXCLUDED.map((e) => e.program));
    const listed = await listExecutables();
    const programs = listed.filter((p) => !excluded.has(p) && (!ONLY || ONLY.includes(basename(p))));
    if (!ONLY) expect(programs.length).toBeGreaterThan(100);
    const individual = process.env.SKALD_WRAPPER_SWEEP_MODE === 'individual';
    const fingerprint = await imageFingerprint(programs);

    let kept = await keptSweep(fingerprint, programs);
    if (!kept) {
      stats.batches = 0;
      stats.untrusted = 0;
      untrustedWhy.length = 0;
      const { found, walled } = await sweepAll(programs);
      kept = {
        fingerprint,
        sweptAt: new Date().toISOString(),
        seconds: Math.round((performance.now() - started) / 1000),
        batches: stats.batches,
        untrusted: stats.untrusted,
        found,
        walled,
      };
      // Kept whole: what a bound cut short (`walled`) is swept again at every use of it.
      await keep(kept);
    }
    const { found, walled } = kept;
    const seconds = (performance.now() - started) / 1000;

    found.sort((a, b) => a.program.localeCompare(b.program));
    const runners = found.filter((f) => f.runs.length > 0);
    const unknown = runners.filter((f) => gateRunnerKnowledge(f.program) === null);
    const fileActors = found.filter((f) => f.runs.length === 0 && f.actsOnFiles.length > 0);
    const flaky = found.filter((f) => f.runs.length === 0 && f.actsOnFiles.length === 0);
    process.stdout.write(
      `wrapper sweep: ${listed.length} executables on the sandbox's PATH, ${programs.length} tried in ` +
        `${SHAPES.length} shapes (${EXCLUDED.length} excluded), ${runners.length} run what they are given, ` +
        `${unknown.length} unknown to the gate; ${fileActors.length} delete their file argument ` +
        `(${fileActors.map((f) => basename(f.program)).join(' ')}); ${flaky.length} deleted only in the batch ` +
        `(${flaky.map((f) => basename(f.program)).join(' ')}); ${walled.length} hit the ${WALL_SEC} s bound ` +
        `or ${MAX_SEC} s by the clock (${walled.join(' ')}); ${individual ? 'one program per sandbox' : `${kept.batches} batches of ${BATCH}, ${kept.untrusted} re-run program by program`}, ` +
        `${CONCURRENCY} sandboxes at a time; ${seconds.toFixed(0)} s` +
        `${Math.abs(seconds - kept.seconds) > 1 ? ` (the kept full sweep of ${kept.sweptAt} took ${kept.seconds} s)` : ''}\n` +
        (untrustedWhy.length > 0 ? `not trusted: ${untrustedWhy.join(' / ')}\n` : '') +
        runners
          .map(
            (f) =>
              `${gateRunnerKnowledge(f.program) ?? 'UNKNOWN'}\t${f.program}\t${f.runs.join(' | ').replaceAll('\n', '\\n')}`,
          )
          .join('\n') +
        '\n',
    );
    recordAttackSuite('wrappers', 'sweep', {
      executables_tried: programs.length,
      deleting_programs: runners.length,
      unknown_to_gate: unknown.length,
    });

    const names = new Set(runners.map((f) => basename(f.program)));
    if (!ONLY) for (const c of CANARIES) expect([c, names.has(c)]).toEqual([c, true]);
    expect(unknown.map((f) => `${f.program}: ${f.runs.join(' | ')}`)).toEqual([]);
  });
});
