// No file-level import cycles inside any app or lib (STYLE.md: "No import cycles (check it in CI)").
// Cycles between projects are reported by @nx/enforce-module-boundaries in `npm run lint`.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { importCyclesIn, runtimeRelativeImports } from './import-cycles';

const repoRoot = join(__dirname, '..', '..');

function projectDirs(): string[] {
  return ['apps', 'libs'].flatMap((group) =>
    readdirSync(join(repoRoot, group), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(repoRoot, group, d.name, 'src')),
  );
}

describe('the repository', () => {
  it('has the thirteen projects to check (six apps with the web client, seven libs)', () => {
    expect(projectDirs()).toHaveLength(13);
  });

  it.each(projectDirs().map((dir) => [dir.slice(repoRoot.length + 1, -'/src'.length), dir]))(
    '%s has no import cycle between its files',
    (_name, dir) => {
      const cycles = importCyclesIn(dir, repoRoot);

      expect(cycles.map((files) => files.join(' <-> '))).toEqual([]);
    },
  );
});

describe('the cycle detector', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'skald-cycles-'));
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  function write(files: Record<string, string>): void {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, name)), { recursive: true });
      writeFileSync(join(root, name), text);
    }
  }

  it('finds a three-file cycle through an index re-export', () => {
    write({
      'index.ts': "export * from './a';\n",
      'a.ts': "import { b } from './b';\nexport const a = () => b;\n",
      'b.ts': "import { c } from './sub/c';\nexport const b = () => c;\n",
      'sub/c.ts': "import { a } from '..';\nexport const c = () => a;\n",
    });

    expect(importCyclesIn(root, root)).toEqual([['a.ts', 'b.ts', 'index.ts', 'sub/c.ts']]);
  });

  it('ignores type-only imports, which the compiler erases', () => {
    write({
      'a.ts': "import type { B } from './b';\nexport interface A { b?: B }\nexport const a = 1;\n",
      'b.ts': "import { type A } from './a';\nexport interface B { a?: A }\n",
    });

    expect(importCyclesIn(root, root)).toEqual([]);
  });

  it('counts a side-effect import and a value re-export as edges', () => {
    expect(
      runtimeRelativeImports(
        'x.ts',
        "import './setup';\nexport { y } from './y';\nexport type { Z } from './z';\nimport { type W } from './w';\n",
      ),
    ).toEqual(['./setup', './y']);
  });
});
