// No dead modules in an app: every source file of an app is imported by another file of that app
// (its entry point `main.ts` aside). A stub nothing uses is a defect: it reads like a part of the
// system and is not one.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

interface Sources {
  listSources(dir: string): string[];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { listSources } = require('../../scripts/check-import-cycles.js') as Sources;

const repoRoot = join(__dirname, '..', '..');
const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+|require\s*\(\s*)['"](\.{1,2}(?:\/[^'"]*)?)['"]/g;

/** Files of `dir` that no other file of `dir` imports (tests and entry points excluded). */
function unimportedFiles(dir: string): string[] {
  const all = listSources(dir).filter((f) => !/\.(spec|integration-spec|serial-spec|e2e-spec)\.ts$/.test(f));
  const sources = listSources(dir);
  const imported = new Set<string>();
  for (const file of sources) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const target = resolve(dirname(file), m[1]);
      for (const candidate of [`${target}.ts`, join(target, 'index.ts'), target]) imported.add(candidate);
    }
  }
  return all
    .filter((f) => !imported.has(f) && !/\/main\.ts$/.test(f))
    .map((f) => relative(repoRoot, f))
    .sort();
}

const appDirs = readdirSync(join(repoRoot, 'apps'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'web')
  .map((d) => [d.name, join(repoRoot, 'apps', d.name, 'src')]);

describe('the apps', () => {
  it.each(appDirs)('%s has no source file that nothing imports', (_name, dir) => {
    expect(unimportedFiles(dir)).toEqual([]);
  });
});
