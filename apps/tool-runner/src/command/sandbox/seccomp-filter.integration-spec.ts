import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { seccompFilter } from '../bwrap-command.runner';

const DIR = resolve(__dirname, '../../../seccomp');

/** The checked-in BPF is exactly what its generator (libseccomp, Debian's libseccomp-dev) makes. */
describe('syscall filter', () => {
  let out: string;
  let generator: string;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'skald-seccomp-'));
    generator = join(out, 'generate');
    execFileSync('gcc', ['-O2', '-Wall', '-Werror', '-o', generator, join(DIR, 'generate.c'), '-lseccomp']);
  });

  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  it.each(['x86_64', 'aarch64'])('regenerating %s.bpf gives the same bytes', async (arch) => {
    const fresh = execFileSync(generator, [arch]);
    expect(fresh.length % 8).toBe(0); // whole sock_filter instructions
    expect(fresh.equals(await readFile(join(DIR, `${arch}.bpf`)))).toBe(true);
  });

  it('is found for x86_64 and aarch64, refused with the reason elsewhere', async () => {
    expect(await seccompFilter('x64')).toBe(join(DIR, 'x86_64.bpf'));
    expect(await seccompFilter('arm64')).toBe(join(DIR, 'aarch64.bpf'));
    await expect(seccompFilter('riscv64')).rejects.toThrow(
      /no syscall filter for the riscv64 architecture .*SKALD_SANDBOX_SECCOMP=off/,
    );
  });
});
