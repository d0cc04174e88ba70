// The file-level import cycle check of `npm run lint` (scripts/check-import-cycles.js; STYLE.md: "No import cycles
// (check it in CI)"). Cycles between projects are reported by @nx/enforce-module-boundaries.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

interface CycleCheck {
  importCyclesIn(projectDir: string, root: string): string[][];
  relativeImports(fileName: string, text: string): string[];
  projectDirs(): string[];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { importCyclesIn, relativeImports, projectDirs } = require('../../scripts/check-import-cycles.js') as CycleCheck;

describe('the projects checked', () => {
  it("are the source folders of every npm workspace (package.json's `workspaces`), the web client and the CLI included", () => {
    const root = join(__dirname, '..', '..');
    const { workspaces } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] };
    const packages = workspaces.flatMap((pattern) => {
      const group = join(root, pattern.replace(/\/\*$/, ''));
      return readdirSync(group, { withFileTypes: true })
        .filter((d) => d.isDirectory() && existsSync(join(group, d.name, 'package.json')))
        .map((d) => join(group, d.name, 'src'));
    });
    expect(packages).toEqual(expect.arrayContaining([join(root, 'apps/web/src'), join(root, 'apps/cli/src')]));
    expect([...projectDirs()].sort()).toEqual(packages.sort());
  });
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

  it('counts type-only imports: they tie two files together as much as value imports', () => {
    write({
      'a.ts': "import type { B } from './b';\nexport interface A { b?: B }\nexport const a = 1;\n",
      'b.ts': "import { type A } from './a';\nexport interface B { a?: A }\n",
    });

    expect(importCyclesIn(root, root)).toEqual([['a.ts', 'b.ts']]);
  });

  it('reads .tsx files too', () => {
    write({
      'view.tsx': "import { state } from './state';\nexport const View = () => <p>{state.x}</p>;\n",
      'state.ts':
        "import type { View } from './view';\nexport const state = { x: 1, view: null as null | typeof View };\n",
    });

    expect(importCyclesIn(root, root)).toEqual([['state.ts', 'view.tsx']]);
  });

  it('counts side-effect imports and re-exports, type-only ones included', () => {
    expect(
      relativeImports(
        'x.ts',
        "import './setup';\nexport { y } from './y';\nexport type { Z } from './z';\nimport { type W } from './w';\n",
      ),
    ).toEqual(['./setup', './y', './z', './w']);
  });
});
