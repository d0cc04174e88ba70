import { bwrapArgs, bwrapOptions, LAUNCHER_SCRIPT, launcherArgs, launcherInput, SandboxLayout } from './bwrap-args';

const layout: SandboxLayout = {
  roDirs: ['/usr'],
  symlinks: [{ target: 'usr/bin', at: '/bin' }],
  roFiles: ['/etc/ssl'],
  generated: [{ src: '/tmp/g/passwd', dest: '/etc/passwd' }],
};

describe('bwrapArgs', () => {
  const base = { layout, workspace: '/srv/ws/u1', cwd: '/workspace/sub', tmpSizeBytes: 1024, command: 'echo "$HOME"' };

  it('unshares everything, drops capabilities, clears the environment and binds the workspace rw', () => {
    const a = bwrapArgs({ ...base, network: false });
    expect(a[0]).toBe('--unshare-all');
    expect(a).not.toContain('--share-net');
    for (const flag of ['--die-with-parent', '--new-session', '--clearenv', '--disable-userns'])
      expect(a).toContain(flag);
    expect(a.join(' ')).toContain('--cap-drop ALL');
    expect(a.join(' ')).toContain('--ro-bind /usr /usr');
    expect(a.join(' ')).toContain('--symlink usr/bin /bin');
    expect(a.join(' ')).toContain('--ro-bind /tmp/g/passwd /etc/passwd');
    expect(a.join(' ')).toContain('--size 1024 --tmpfs /tmp');
    expect(a.join(' ')).toContain('--bind /srv/ws/u1 /workspace --chdir /workspace/sub');
    // The environment is exactly the one set here.
    const envs = a.flatMap((x, i) => (x === '--setenv' ? [a[i + 1]] : []));
    expect(envs.sort()).toEqual(['HOME', 'LANG', 'PATH', 'TERM', 'TMPDIR', 'USER']);
    // The command is one argv element after `--`, never parsed by anything but the sandbox's sh.
    expect(a.slice(-4)).toEqual(['--', '/bin/sh', '-c', 'echo "$HOME"']);
  });

  it('keeps the network only when allowed', () => {
    expect(bwrapArgs({ ...base, network: true })).toContain('--share-net');
  });
});

describe('launcher', () => {
  it('passes bwrap, an inline command and the cgroup files as positional arguments, never as code', () => {
    expect(launcherArgs('/usr/bin/bwrap', ['/cg/pids/c/cgroup.procs'])).toEqual([
      '-c',
      LAUNCHER_SCRIPT,
      'sh',
      '/usr/bin/bwrap',
      '',
      '/cg/pids/c/cgroup.procs',
    ]);
    expect(launcherArgs('bwrap', [], 'echo "$x"')).toEqual(['-c', LAUNCHER_SCRIPT, 'sh', 'bwrap', 'echo "$x"']);
    expect(LAUNCHER_SCRIPT).toContain('echo $$ > "$f" || exit 125');
    expect(LAUNCHER_SCRIPT).toContain('ulimit -t "$cpu" && ulimit -f "$fsize" || exit 125');
    expect(LAUNCHER_SCRIPT).toContain('exec "$b" --args 3 -- /bin/sh -c "$c" 3<&0 0</dev/null');
  });

  it('sends the limits, the command line by line and the NUL-separated options on stdin', () => {
    const input = launcherInput({ cpuSeconds: 2.5, fileSizeBytes: 1024 * 1024 }, 'a\n b\\\n', ['--x', 'y z']);
    expect(input.toString()).toBe('3 2048 - 3\na\n b\\\n\n--x\0y z\0');
  });

  it('adds RLIMIT_AS when no memory cgroup bounds the tree, and no lines for an inline command', () => {
    const input = launcherInput({ cpuSeconds: 1, fileSizeBytes: 0, addressSpaceBytes: 2048 * 1024 }, null, []);
    expect(input.toString()).toBe('1 0 2048 -\n');
  });

  it('bwrap reads the options alone; the command follows them', () => {
    const spec = { layout, workspace: '/w', cwd: '/workspace', network: false, tmpSizeBytes: 1 };
    expect(bwrapArgs({ ...spec, command: 'x' })).toEqual([...bwrapOptions(spec), '--', '/bin/sh', '-c', 'x']);
    expect(bwrapOptions(spec)).not.toContain('--');
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
