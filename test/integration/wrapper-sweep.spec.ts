import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import pino from 'pino';
import { recordAttackSuite } from '@skald/testing';
import { gateRunnerKnowledge } from '../../apps/approval-service/src/rules/command-match';
import { BwrapCommandRunner } from '../../apps/tool-runner/src/command/bwrap-command.runner';
import { CommandOutcome } from '../../apps/tool-runner/src/command/command-runner';
import { SANDBOX_PATH, shellQuote } from '../../apps/tool-runner/src/command/sandbox/bwrap-args';
import { ToolRunnerConfigSchema } from '../../apps/tool-runner/src/config';

/**
 * Wrappers are found by asking the system (issue 34, point 3). Every executable the sandbox sees on
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
 * Bounds: each process has `CPU_SEC` CPU seconds (a spinning `yes` dies); a program's shapes end
 * when nothing in its sandbox has been runnable for `QUIET_SEC` (a server waiting in accept(),
 * a prompt waiting for a terminal) — a bound that a loaded machine does not shorten — and in any
 * case after `WALL_SEC` (the runner kills bwrap, the pid namespace's init: everything inside dies).
 * One sandbox per program, its shapes started at once; two sandboxes at a time.
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
const CONCURRENCY = 2;

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
  const lines = [`ulimit -t ${CPU_SEC}`, 'cd /workspace || exit 125'];
  for (const [dir, script] of cases) lines.push(`(cd ${dir} && ${script}) >/dev/null 2>&1 &`);
  lines.push(
    'quiet=0',
    'while :; do',
    '  busy= active=',
    '  for p in /proc/[0-9]*; do',
    '    n=${p#/proc/}; [ "$n" = 1 ] || [ "$n" = $$ ] || { read -r l 2>/dev/null <"$p/stat" || continue; l=${l##*) }',
    '      case $l in Z*) ;; R*|D*) busy=1 active=1; break;; *) busy=1;; esac; }',
    '  done',
    '  [ -n "$busy" ] || exit 0',
    `  if [ -n "$active" ]; then quiet=0; else quiet=$((quiet + 1)); [ $quiet -ge ${QUIET_SEC * 10} ] && exit 0; fi`,
    '  sleep 0.1',
    'done',
  );
  return lines.join('\n');
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
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
        SKALD_SANDBOX_PIDS: '256',
        SKALD_SANDBOX_MEMORY: String(1024 ** 3),
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
   * a program that went to $HOME before deleting). Which markers went, and whether it hit WALL_SEC.
   */
  async function runCases(cases: ReadonlyArray<string>): Promise<{ deleted: boolean[]; walled: boolean }> {
    const ws = join(base, String(++seq));
    await mkdir(ws);
    await writeFile(join(ws, 'marker'), 'm');
    for (let k = 0; k < cases.length; k++) {
      await mkdir(join(ws, String(k)));
      await writeFile(join(ws, String(k), 'marker'), 'm');
    }
    const out = await run(ws, batchScript(cases.map((c, k) => [String(k), c] as const)), WALL_SEC);
    const rootGone = !(await exists(join(ws, 'marker')));
    const deleted: boolean[] = [];
    for (let k = 0; k < cases.length; k++) deleted.push(rootGone || !(await exists(join(ws, String(k), 'marker'))));
    await rm(ws, { recursive: true, force: true });
    return { deleted, walled: out.kind !== 'exited' };
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

  /** A program: its shapes together, then each deleting shape alone and its decoy alone. */
  async function sweep(program: string): Promise<{ found: Found | null; walled: boolean }> {
    const screen = await runCases(SHAPES.map((s) => caseScript(program, s.shape)));
    const found: Found = { program, runs: [], actsOnFiles: [], notReproduced: [] };
    for (let k = 0; k < SHAPES.length; k++) {
      if (!screen.deleted[k]) continue;
      const text = caseScript(program, SHAPES[k].shape);
      const alone = await runCases([text]);
      const decoy = await runCases([caseScript(program, SHAPES[k].decoy)]);
      if (!alone.deleted[0]) found.notReproduced.push(text);
      else if (decoy.deleted[0]) found.actsOnFiles.push(text);
      else found.runs.push(text);
    }
    const any = found.runs.length + found.actsOnFiles.length + found.notReproduced.length > 0;
    return { found: any ? found : null, walled: screen.walled };
  }

  it('every program that runs what it is given is known to the gate as running a command or code', async () => {
    const started = performance.now();
    const excluded = new Set(EXCLUDED.map((e) => e.program));
    const listed = await listExecutables();
    const programs = listed.filter((p) => !excluded.has(p));
    expect(programs.length).toBeGreaterThan(100);

    const found: Found[] = [];
    const walled: string[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < programs.length) {
        const program = programs[next++];
        const r = await sweep(program);
        if (r.walled) walled.push(basename(program));
        if (r.found) found.push(r.found);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, () => worker()));
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
        `(${walled.join(' ')}); ${seconds.toFixed(0)} s\n` +
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
    for (const c of CANARIES) expect([c, names.has(c)]).toEqual([c, true]);
    expect(unknown.map((f) => `${f.program}: ${f.runs.join(' | ')}`)).toEqual([]);
  });
});
