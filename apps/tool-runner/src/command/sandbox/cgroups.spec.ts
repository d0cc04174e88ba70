import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cgroups } from './cgroups';

/**
 * The cgroup v2 code path against a fake cgroupfs (this machine's pids, memory and cpu controllers
 * are bound to v1, so a real cgroup2 mount here offers none of them): which files are written where.
 */
describe('Cgroups v2', () => {
  let root: string;
  const limits = { pids: 64, memoryBytes: 256 * 1024 ** 2, cpus: 1.5 };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'skald-cg2-'));
    await mkdir(join(root, 'pod', 'ctr'), { recursive: true });
    await writeFile(join(root, 'pod', 'ctr', 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids rdma misc\n');
    await writeFile(join(root, 'pod', 'ctr', 'cgroup.procs'), '4242\n4243\n');
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  // A container: its own cgroup namespace, so its cgroup is `/` (the fake root stands for /sys/fs/cgroup).
  const v2Only = '0::/\n';
  const fakeRoot = () => join(root, 'pod', 'ctr');

  it('moves the processes of its own cgroup to a leaf, enables the controllers below, one cgroup per call', async () => {
    const cg = await Cgroups.detect(limits, fakeRoot(), v2Only, 4242);
    expect(cg.version).toBe(2);
    expect(cg.controllers.sort()).toEqual(['cpu', 'memory', 'pids']);
    const own = join(root, 'pod', 'ctr');
    expect(await readFile(join(own, 'skald-service', 'cgroup.procs'), 'utf8')).toBe('4243'); // each pid written in turn
    expect(await readFile(join(own, 'cgroup.subtree_control'), 'utf8')).toBe('+pids +memory +cpu');
    expect(await readFile(join(own, 'skald-runner-4242', 'cgroup.subtree_control'), 'utf8')).toBe('+pids +memory +cpu');

    const call = await cg.create('call-1');
    const dir = join(own, 'skald-runner-4242', 'call-1');
    expect(call.procsFiles).toEqual([join(dir, 'cgroup.procs')]);
    expect(await readFile(join(dir, 'pids.max'), 'utf8')).toBe('64');
    expect(await readFile(join(dir, 'memory.max'), 'utf8')).toBe(String(256 * 1024 ** 2));
    expect(await readFile(join(dir, 'memory.swap.max'), 'utf8')).toBe('0');
    expect(await readFile(join(dir, 'cpu.max'), 'utf8')).toBe('150000 100000');
    await writeFile(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n');
    expect(call.oomKills()).toBe(2);
    call.destroy();
    // cgroup.kill written (the kernel kills every member), then the directory is removed.
    expect(await readFile(join(dir, 'cgroup.kill'), 'utf8')).toBe('1');
    await rm(dir, { recursive: true }); // what the kernel does for a real cgroup's rmdir
    await cg.dispose();
  });

  it('takes only the controllers offered, and none at all without them (rlimits)', async () => {
    await writeFile(join(root, 'pod', 'ctr', 'cgroup.controllers'), 'pids\n');
    const cg = await Cgroups.detect(limits, fakeRoot(), v2Only, 4242);
    expect([cg.version, cg.controllers]).toEqual([2, ['pids']]);
    await writeFile(join(root, 'pod', 'ctr', 'cgroup.controllers'), 'hugetlb\n');
    const none = await Cgroups.detect(limits, fakeRoot(), v2Only, 4243);
    expect([none.version, none.controllers]).toEqual([0, []]);
  });

  it('does nothing where the cgroup is not a cgroup, or not the root of a cgroup namespace (a login session)', async () => {
    const none = await Cgroups.detect(limits, join(root, 'nothing'), v2Only, 4242);
    expect([none.version, none.controllers]).toEqual([0, []]);
    const session = await Cgroups.detect(limits, root, '0::/pod/ctr\n', 4242);
    expect([session.version, session.controllers]).toEqual([0, []]);
    expect((await readdir(join(root, 'pod', 'ctr'))).sort()).toEqual(['cgroup.controllers', 'cgroup.procs']);
  });

  it('falls back to v2 when a listed v1 hierarchy does not exist; paths may contain colons', async () => {
    const cg = await Cgroups.detect(limits, fakeRoot(), '4:memory:/a:b\n0::/\n', 4242);
    expect(cg.version).toBe(2);
  });
});
