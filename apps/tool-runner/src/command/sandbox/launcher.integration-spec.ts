import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { launcherArgs, launcherInput, ShellLimits } from './bwrap-args';

/**
 * The launcher script under the real /bin/sh, with a stand-in for bwrap that reports what it was
 * given: its argv, the options it would read from `--args 3`, its rlimits and its stdin.
 */
describe('launcher script', () => {
  let dir: string;
  let fakeBwrap: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'skald-launcher-'));
    fakeBwrap = join(dir, 'bwrap');
    await writeFile(
      fakeBwrap,
      [
        '#!/bin/sh',
        'printf "%s\\0" "$@"',
        'printf "OPTIONS\\0"',
        'cat <&3',
        'printf "SCRIPT\\0"',
        'cat <&4',
        'printf "\\0SECCOMP\\0"',
        '[ -e /proc/$$/fd/5 ] && cat <&5',
        'printf "\\0"',
        'printf "LIMITS\\0%s %s %s\\0" "$(ulimit -t)" "$(ulimit -f)" "$(ulimit -d)"',
        'printf "STDIN\\0%s\\0" "$(readlink /proc/$$/fd/0)"',
        'printf "ENV\\0%s\\0" "$(env | sort | tr "\\n" " ")"',
        'printf "CWD\\0%s\\0" "$PWD"',
      ].join('\n'),
    );
    await chmod(fakeBwrap, 0o755);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs a launcher like the runner does. */
  async function launch(
    command: string,
    limits: ShellLimits,
    options: string[],
    seccomp: string | null = null,
    setpriv: string | null = null,
  ) {
    const child = spawn('/bin/sh', launcherArgs(fakeBwrap, seccomp, [], setpriv), {
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    child.stderr?.on('data', (b: Buffer) => err.push(b));
    // Spawned ahead of its call: the input comes later.
    await new Promise((r) => setTimeout(r, 50));
    (child.stdio[3] as Writable).end(launcherInput(limits, options));
    (child.stdio[4] as Writable).end(command);
    const code = await new Promise<number | null>((r) => child.once('close', r));
    let fields = Buffer.concat(out).toString().split('\0');
    const via = fields[0] === 'SETPRIV' ? fields[1] : null;
    if (via !== null) fields = fields.slice(2);
    const at = (name: string) => fields.indexOf(name);
    return {
      via,
      code,
      stderr: Buffer.concat(err).toString(),
      argv: fields.slice(0, at('OPTIONS')),
      options: fields.slice(at('OPTIONS') + 1, at('SCRIPT')),
      script: fields[at('SCRIPT') + 1],
      seccomp: fields[at('SECCOMP') + 1],
      limits: fields[at('LIMITS') + 1],
      stdin: fields[at('STDIN') + 1],
      env: fields[at('ENV') + 1],
      cwd: fields[at('CWD') + 1],
    };
  }

  const limits = { cpuSeconds: 7, fileSizeBytes: 512 * 100, processes: 64 };
  const commands = [
    'true',
    'echo "$HOME" \\\n  && printf "%s\\n" \'a  b\'',
    '  leading and trailing spaces\t ',
    "cat <<'EOF'\nline with \\ backslash\n\n\tindented\nEOF\n",
    'ends with two newlines\n\n',
    '\n',
    'ünïcödé → ✓; $(echo sub) `echo tick` ${x:-y}',
  ];

  it.each([...commands, `echo ${'x'.repeat(200_000)}\necho done`])(
    'hands command %# to bwrap as data, byte for byte; the argv, environment and cwd of bwrap are constants',
    async (command) => {
      const r = await launch(command, limits, ['--unshare-all', '--bind', '/a b', '/workspace']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.argv).toEqual(['--args', '3', '--', '/bin/sh', '-c', 'ulimit -p 64 && . /.skald-launch']);
      expect(r.via).toBeNull();
      expect(r.options).toEqual(['--unshare-all', '--bind', '/a b', '/workspace']);
      expect(r.script).toBe(command);
      expect(r.env).toBe('PATH=/usr/bin:/bin PWD=/ ');
      expect(r.cwd).toBe('/');
    },
  );

  it('opens the syscall filter on fd 5 when there is one', async () => {
    const bpf = join(dir, 'filter.bpf');
    await writeFile(bpf, 'BPF-BYTES');
    expect((await launch('true', limits, [], bpf)).seccomp).toBe('BPF-BYTES');
    expect((await launch('true', limits, [], null)).seccomp).toBe('');
  });

  it('lowers the rlimits and gives the command /dev/null as stdin', async () => {
    const r = await launch(
      'true',
      { cpuSeconds: 7, fileSizeBytes: 512 * 100, dataBytes: 64 * 1024 ** 2, processes: 64 },
      [],
    );
    expect(r.limits).toBe(`7 100 ${64 * 1024}`);
    expect(r.stdin).toBe('/dev/null');
  });

  it("runs bwrap through setpriv as the call's uid, with no groups, when the call names one", async () => {
    const setpriv = join(dir, 'setpriv');
    await writeFile(setpriv, '#!/bin/sh\nprintf "SETPRIV\\0%s\\0" "$*"\nshift 4\nexec "$@"\n');
    await chmod(setpriv, 0o755);
    const r = await launch('true', { ...limits, uid: 10042 }, ['--unshare-all'], null, setpriv);
    expect(r.via).toBe(
      `--reuid=10042 --regid=10042 --clear-groups -- ${fakeBwrap} --args 3 -- /bin/sh -c ulimit -p 64 && . /.skald-launch`,
    );
    expect(r.options).toEqual(['--unshare-all']);
    // Without a uid in the call, setpriv is not used even when the launcher has one.
    expect((await launch('true', limits, [], null, setpriv)).via).toBeNull();
  });

  it('exits without running anything when the runner goes away before the call', async () => {
    const child = spawn('/bin/sh', launcherArgs(fakeBwrap, null, []), {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    (child.stdio[3] as Writable).end();
    expect(await new Promise((r) => child.once('close', r))).toBe(125);
    expect(Buffer.concat(out).length).toBe(0);
  });

  it('refuses to run when it cannot join its cgroup', async () => {
    const child = spawn('/bin/sh', launcherArgs(fakeBwrap, null, [join(dir, 'missing', 'cgroup.procs')]), {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    (child.stdio[3] as Writable).on('error', () => undefined).end(launcherInput(limits, []));
    expect(await new Promise((r) => child.once('close', r))).toBe(125);
    expect(Buffer.concat(out).length).toBe(0);
  });
});
