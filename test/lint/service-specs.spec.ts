// Every service of an app has a unit spec beside it: `<name>.service.ts` and `<name>.service.spec.ts`
// in the same folder (built with fakes, `newTestService` from `@skald/testing/unit`). The services
// hold the logic; a service without a spec is logic that only slow tiers test.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const repoRoot = join(__dirname, '..', '..');

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out);
    else out.push(path);
  }
  return out;
}

/** The `*.service.ts` files under `appsDir` without a sibling `*.service.spec.ts`, relative to `appsDir`. */
function servicesWithoutSpec(appsDir: string): string[] {
  const files = new Set(walk(appsDir));
  return [...files]
    .filter((f) => f.endsWith('.service.ts') && !files.has(f.replace(/\.service\.ts$/, '.service.spec.ts')))
    .map((f) => relative(appsDir, f))
    .sort();
}

describe('service specs', () => {
  it('every apps/**/*.service.ts has a sibling <name>.service.spec.ts', () => {
    const apps = join(repoRoot, 'apps');
    expect(walk(apps).filter((f) => f.endsWith('.service.ts')).length).toBeGreaterThan(20);
    expect(servicesWithoutSpec(apps)).toEqual([]);
  });

  it('names a service whose spec is missing, and only that one', () => {
    const apps = mkdtempSync(join(tmpdir(), 'skald-service-specs-'));
    try {
      mkdirSync(join(apps, 'worker', 'src', 'jobs'), { recursive: true });
      for (const f of [
        'jobs/jobs.service.ts',
        'jobs/jobs.service.spec.ts',
        'jobs/retry.service.ts',
        'jobs/retry.spec.ts',
      ])
        writeFileSync(join(apps, 'worker', 'src', f), '');
      expect(servicesWithoutSpec(apps)).toEqual(['worker/src/jobs/retry.service.ts']);
    } finally {
      rmSync(apps, { recursive: true, force: true });
    }
  });
});
