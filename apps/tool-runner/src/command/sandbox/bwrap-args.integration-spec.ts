import { execFileSync } from 'node:child_process';
import {
  bwrapOptions,
  execScript,
  LAUNCH_FILE,
  LAUNCHER_SCRIPT,
  launcherArgs,
  launcherInput,
  SandboxLayout,
  shellQuote,
} from './bwrap-args';

const layout: SandboxLayout = {
  roDirs: ['/usr'],
  symlinks: [{ target: 'usr/bin', at: '/bin' }],
  roFiles: ['/etc/ssl'],
  generated: [{ src: '/tmp/g/passwd', dest: '/etc/passwd' }],
};

describe('bwrapOptions', () => {
  const base = { layout, workspace: '/srv/ws/u1', cwd: '/workspace/sub', tmpSizeBytes: 1024, seccomp: true };

  it('unshares everything, drops capabilities, filters syscalls, clears the environment and binds the workspace rw', () => {
    const a = bwrapOptions({ ...base, network: false });
    expect(a[0]).toBe('--unshare-all');
    expect(a).not.toContain('--share-net');
    for (const flag of ['--die-with-parent', '--new-session', '--clearenv', '--disable-userns'])
      expect(a).toContain(flag);
    expect(a.join(' ')).toContain('--cap-drop ALL');
    expect(a.join(' ')).toContain('--seccomp 5');
    expect(a.join(' ')).toContain('--ro-bind /usr /usr');
    expect(a.join(' ')).toContain('--symlink usr/bin /bin');
    expect(a.join(' ')).toContain('--ro-bind /tmp/g/passwd /etc/passwd');
    expect(a.join(' ')).toContain('--size 1024 --tmpfs /tmp');
    expect(a.join(' ')).toContain('--size 1024 --tmpfs /dev/shm');
    // Every other tmpfs bwrap makes (the root, /dev) is read-only once the sandbox is set up.
    expect(a.slice(-4)).toEqual(['--remount-ro', '/dev', '--remount-ro', '/']);
    expect(a.filter((o) => o === '--tmpfs').length).toBe(a.filter((o) => o === '--size').length);
    expect(a.join(' ')).toContain(`--perms 0444 --file 4 ${LAUNCH_FILE}`);
    expect(a.join(' ')).toContain('--bind /srv/ws/u1 /workspace --chdir /workspace/sub');
    // The environment is exactly the one set here.
    const envs = a.flatMap((x, i) => (x === '--setenv' ? [a[i + 1]] : []));
    expect(envs.sort()).toEqual(['HOME', 'LANG', 'PATH', 'TERM', 'TMPDIR', 'USER']);
    expect(a).not.toContain('--');
    expect(bwrapOptions({ ...base, seccomp: false, network: false })).not.toContain('--seccomp');
  });

  it('keeps the network only when allowed', () => {
    expect(bwrapOptions({ ...base, network: true })).toContain('--share-net');
  });

  it('refuses an option with a NUL byte (it would split into two options)', () => {
    expect(() => bwrapOptions({ ...base, network: false, cwd: '/workspace/a\0--bind' })).toThrow(/NUL/);
  });
});

/** Seeded words of every kind a shell might trip on: quotes, `$`, backslashes, newlines, unicode, lone surrogates. */
function randomWords(seed: number, n: number): string[] {
  let x = seed >>> 0;
  const next = (): number => {
    x = (x + 0x6d2b79f5) >>> 0;
    let t = Math.imul(x ^ (x >>> 15), 1 | x);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const alphabet = [
    "'",
    '"',
    '\\',
    '$',
    '`',
    '\n',
    ' ',
    '\t',
    '*',
    '?',
    '~',
    '-',
    '=',
    '(',
    ')',
    ';',
    '&',
    '|',
    '!',
    '#',
    'a',
    'Z',
    'é',
    '→',
    '\u2028',
    '\ufeff',
    '\u202e',
    '\ud83d\ude00',
  ];
  return Array.from({ length: n }, () => {
    const len = Math.floor(next() * 24);
    let w = '';
    for (let i = 0; i < len; i++)
      w +=
        next() < 0.7
          ? alphabet[Math.floor(next() * alphabet.length)]
          : String.fromCharCode(1 + Math.floor(next() * 0x2fff));
    return w;
  });
}

describe('launch scripts', () => {
  const seed = Date.now() ^ 0x5eed;
  console.log(`launch script property seed: ${seed}`);

  it('shellQuote round-trips any word through the real /bin/sh (differential, generated)', () => {
    const words = randomWords(seed, 2000);
    // One shell for all of them: each word printed NUL-terminated.
    const script = words.map((w) => `printf '%s\\0' ${shellQuote(w)}`).join('\n');
    const out = execFileSync('/bin/sh', ['-c', script], { env: {} });
    expect(out.toString('utf8').split('\0').slice(0, -1)).toEqual(words);
  });

  it('exports the variables inside and execs the argv as words', () => {
    const script = execScript({ TOKEN: "a'b $(x)\nc" }, ['node', '/srv/x.js', '--flag=$HOME']);
    const out = execFileSync('/bin/sh', ['-c', `${script.replace(/^exec /m, 'printf "%s|" "$TOKEN" ')}`], {
      env: { PATH: '/usr/bin:/bin' },
    });
    expect(out.toString()).toBe("a'b $(x)\nc|node|/srv/x.js|--flag=$HOME|");
  });

  it('refuses names that are not environment names and NUL bytes', () => {
    expect(() => execScript({ 'A;rm -rf /': 'x' }, ['true'])).toThrow(/not an environment variable name/);
    expect(() => execScript({}, ['a\0b'])).toThrow(/NUL/);
  });
});

describe('launcher', () => {
  it('takes bwrap, the filter and the cgroup files as positional arguments, never as code; nothing of the call', () => {
    expect(launcherArgs('/usr/bin/bwrap', '/srv/f.bpf', ['/cg/pids/c/cgroup.procs'], '/usr/bin/setpriv')).toEqual([
      '-c',
      LAUNCHER_SCRIPT,
      'sh',
      '/usr/bin/bwrap',
      '/usr/bin/setpriv',
      '/srv/f.bpf',
      '/cg/pids/c/cgroup.procs',
    ]);
    expect(launcherArgs('bwrap', null, [])).toEqual(['-c', LAUNCHER_SCRIPT, 'sh', 'bwrap', '', '']);
    expect(LAUNCHER_SCRIPT).toContain('echo $$ > "$f" || exit 125');
    expect(LAUNCHER_SCRIPT).toContain('ulimit -t "$cpu" && ulimit -f "$fsize" || exit 125');
    expect(LAUNCHER_SCRIPT).toContain(`exec "$@" --args 3 -- /bin/sh -c "ulimit -p $nproc && . ${LAUNCH_FILE}"`);
  });

  it('sends the limits, then the NUL-separated options on fd 3', () => {
    expect(
      launcherInput({ cpuSeconds: 2.5, fileSizeBytes: 1024 * 1024, processes: 64 }, ['--x', 'y z']).toString(),
    ).toBe('3 2048 - 64 -\n--x\0y z\0');
  });

  it('adds RLIMIT_DATA when no memory cgroup bounds the tree, and the tenant uid when there is one', () => {
    const input = launcherInput({ cpuSeconds: 1, fileSizeBytes: 0, dataBytes: 2048 * 1024, processes: 8 }, []);
    expect(input.toString()).toBe('1 0 2048 8 -\n');
    expect(launcherInput({ cpuSeconds: 1, fileSizeBytes: 0, processes: 8, uid: 10007 }, []).toString()).toBe(
      '1 0 - 8 10007\n',
    );
  });
});

describe('Cgroups', () => {
  it('never creates anything outside a cgroup hierarchy', async () => {
    const { mkdtemp, readdir, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { Cgroups } = await import('./cgroups');
    const root = await mkdtemp(join(tmpdir(), 'skald-cg-'));
    try {
      const cg = await Cgroups.detect({ pids: 10, memoryBytes: 1 << 20, cpus: 1 }, root);
      expect(cg.controllers).toEqual([]);
      expect(await readdir(root)).toEqual([]);
      expect(Cgroups.none().controllers).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
