import { bwrapArgs, launcherArgs, SandboxLayout } from './bwrap-args';

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

describe('launcherArgs', () => {
  it('passes cgroup files and limits as positional arguments and execs bwrap', () => {
    const argv = launcherArgs(
      '/usr/bin/bwrap',
      ['--unshare-all', '--', '/bin/sh', '-c', 'x'],
      ['/cg/pids/c/cgroup.procs'],
      {
        cpuSeconds: 2.5,
        fileSizeBytes: 1024 * 1024,
      },
    );
    expect(argv[0]).toBe('-c');
    expect(argv[1]).toContain('echo $$ > "$1"');
    expect(argv[1]).toContain('ulimit -t "$2" && ulimit -f "$3"');
    expect(argv[1]).not.toContain('ulimit -v');
    expect(argv[1]).toContain('shift 4');
    expect(argv.slice(2)).toEqual([
      'sh',
      '/cg/pids/c/cgroup.procs',
      '3',
      '2048',
      '0',
      '/usr/bin/bwrap',
      '--unshare-all',
      '--',
      '/bin/sh',
      '-c',
      'x',
    ]);
  });

  it('adds RLIMIT_AS when no memory cgroup bounds the tree', () => {
    const argv = launcherArgs('bwrap', [], [], { cpuSeconds: 1, fileSizeBytes: 0, addressSpaceBytes: 2048 * 1024 });
    expect(argv[1]).toContain('ulimit -v "$3"');
    expect(argv[1]).toContain('shift 3');
    expect(argv.slice(2, 6)).toEqual(['sh', '1', '0', '2048']);
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
