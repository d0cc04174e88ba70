// No AsyncLocalStorage or async_hooks.createHook in the apps' and libs' run-time code. On Node 20 the
// first AsyncLocalStorage run (or an enabled hook) turns on V8's promise hooks for every promise of
// the process for good: the session worker paid ~0.4–0.7 ms of its ~5 ms of CPU per tool round for
// them (docs/performance.md, "No promise hooks"). Context a line or a call needs travels explicitly (a
// logger made with `loggerWithIds`, a parameter). Tests and bench scripts may use them.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

interface Sources {
  listSources(dir: string): string[];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { listSources } = require('../../scripts/check-import-cycles.js') as Sources;

const repoRoot = join(__dirname, '..', '..');

/** The module whose hooks cost every promise, in each spelling Node resolves. */
const HOOKS_MODULE = 'async_hooks';
const HOOKS_SPECIFIERS = new Set([HOOKS_MODULE, `node:${HOOKS_MODULE}`]);
/** Its exports that turn promise hooks on (the other ones, e.g. `AsyncResource`, do not by themselves). */
const HOOK_EXPORTS = new Set(['AsyncLocalStorage', 'createHook']);

/** The projects: the workspaces of the root package.json (`apps/*`, `libs/*`), each one's `src`. */
function projectSrcDirs(): string[] {
  const { workspaces } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { workspaces: string[] };
  return workspaces.flatMap((pattern) => {
    const group = pattern.replace(/\/\*$/, '');
    return readdirSync(join(repoRoot, group), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(repoRoot, group, d.name, 'src'));
  });
}

/** The test files' suffixes next to the code, as jest.config.js matches them (`.spec.ts`, `.integration-spec.ts`, …). */
function testSuffixes(): string[] {
  const config = createRequire(__filename)(join(repoRoot, 'jest.config.js')) as {
    projects: Array<{ testMatch: string[] }>;
  };
  return config.projects
    .flatMap((p) => p.testMatch)
    .filter((glob) => glob.includes('{apps,libs}'))
    .map((glob) => glob.slice(glob.lastIndexOf('/') + 1).replace(/^\*/, ''));
}

/** The places in `text` that reach for the hooks: an import or require of the module, or a hook export by name. */
export function promiseHookUses(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string): void => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart());
    found.push(`${file}:${line + 1} ${what}`);
  };
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      HOOKS_SPECIFIERS.has(node.moduleSpecifier.text)
    )
      at(node, `imports ${node.moduleSpecifier.text}`);
    else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments.length > 0 &&
      ts.isStringLiteralLike(node.arguments[0]) &&
      HOOKS_SPECIFIERS.has(node.arguments[0].text)
    )
      at(node, `loads ${node.arguments[0].text}`);
    else if (ts.isIdentifier(node) && HOOK_EXPORTS.has(node.text)) at(node, `uses ${node.text}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('run-time code', () => {
  const suffixes = testSuffixes();
  const files = projectSrcDirs()
    .flatMap((dir) => listSources(dir))
    .filter((f) => !suffixes.some((s) => f.endsWith(s)));

  it('is found: every project, and no test file among it', () => {
    expect(suffixes).toEqual(expect.arrayContaining(['.spec.ts', '.integration-spec.ts']));
    expect(files.some((f) => f.endsWith(join('session-worker', 'src', 'turns', 'turn-driver.ts')))).toBe(true);
    expect(files.some((f) => f.endsWith(join('service-kit', 'src', 'logger.ts')))).toBe(true);
    expect(files.filter((f) => f.endsWith('.spec.ts'))).toEqual([]);
  });

  it('turns on no promise hooks: no AsyncLocalStorage, no async_hooks.createHook', () => {
    const uses = files.flatMap((f) => promiseHookUses(relative(repoRoot, f), readFileSync(f, 'utf8')));
    expect(uses).toEqual([]);
  });
});

describe('the promise hook detector', () => {
  it.each([
    [
      "import { AsyncLocalStorage } from 'node:async_hooks';",
      ['x.ts:1 imports node:async_hooks', 'x.ts:1 uses AsyncLocalStorage'],
    ],
    [
      "import * as hooks from 'async_hooks';\nhooks.createHook({}).enable();",
      ['x.ts:1 imports async_hooks', 'x.ts:2 uses createHook'],
    ],
    [
      "const { AsyncLocalStorage: S } = require('node:async_hooks');",
      ['x.ts:1 uses AsyncLocalStorage', 'x.ts:1 loads node:async_hooks'],
    ],
    ["export { createHook } from 'async_hooks';", ['x.ts:1 imports async_hooks', 'x.ts:1 uses createHook']],
    ["void import('node:async_hooks');", ['x.ts:1 loads node:async_hooks']],
  ])('finds %s', (text, expected) => {
    expect(promiseHookUses('x.ts', text).sort()).toEqual([...expected].sort());
  });

  it('ignores comments and strings that only name them', () => {
    expect(promiseHookUses('x.ts', "// an AsyncLocalStorage would cost\nconst s = 'createHook';\n")).toEqual([]);
  });
});
