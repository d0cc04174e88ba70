#!/usr/bin/env node
// File-level import cycles inside one project (apps/*/src, libs/*/src), .ts and .tsx, found with the TypeScript
// compiler API.
//
//   node scripts/check-import-cycles.js       # exit 1 and list the cycles when there is one (npm run lint)
//
// Cycles between projects are @nx/enforce-module-boundaries' job (it reports circular project dependencies); this
// covers what it cannot see: `a.ts -> b.ts -> a.ts` inside one app or lib. A run-time cycle hands one of the files
// an undefined import (the classic cause of Nest's "cannot resolve dependency" and of `forwardRef`); a type-only
// one (`import type`) is erased by the compiler but still ties two files so that neither can change alone. Both
// count.
'use strict';

const { readdirSync, readFileSync, statSync } = require('node:fs');
const { join, relative } = require('node:path');
const ts = require('typescript');

const ROOT = join(__dirname, '..');

/** @type {import('typescript').CompilerOptions} */
const COMPILER_OPTIONS = {
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  resolveJsonModule: true,
  jsx: ts.JsxEmit.ReactJSX,
};

/**
 * Every .ts and .tsx source under `dir` (no declaration files, no build output).
 * @param {string} dir
 * @returns {string[]}
 */
function listSources(dir) {
  /** @type {string[]} */
  const out = [];
  /** @param {string} d */
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      if (name === 'node_modules' || name === 'dist') continue;
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * Relative module specifiers a file imports or re-exports, type-only ones included.
 * @param {string} fileName
 * @param {string} text
 * @returns {string[]}
 */
function relativeImports(fileName, text) {
  const kind = fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, kind);
  /** @type {string[]} */
  const specifiers = [];
  /** @param {import('typescript').Expression | undefined} expr */
  const add = (expr) => {
    if (expr && ts.isStringLiteral(expr) && expr.text.startsWith('.')) specifiers.push(expr.text);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) {
      add(statement.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(statement)) {
      const ref = statement.moduleReference;
      if (ts.isExternalModuleReference(ref)) add(ref.expression);
    }
  }
  return specifiers;
}

/**
 * Import graph of the given files: file -> files it imports (only files in the set).
 * @param {readonly string[]} files
 * @returns {Map<string, string[]>}
 */
function buildGraph(files) {
  const inSet = new Set(files);
  /** @type {Map<string, string[]>} */
  const graph = new Map();
  for (const file of files) {
    /** @type {Set<string>} */
    const targets = new Set();
    for (const spec of relativeImports(file, readFileSync(file, 'utf8'))) {
      const resolved = ts.resolveModuleName(spec, file, COMPILER_OPTIONS, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved && inSet.has(resolved)) targets.add(resolved);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/**
 * Strongly connected components with more than one file, or a file importing itself (Tarjan).
 * @param {ReadonlyMap<string, readonly string[]>} graph
 * @returns {string[][]}
 */
function findCycles(graph) {
  let nextIndex = 0;
  /** @type {Map<string, number>} */
  const index = new Map();
  /** @type {Map<string, number>} */
  const low = new Map();
  /** @type {string[]} */
  const stack = [];
  const onStack = new Set();
  /** @type {string[][]} */
  const cycles = [];
  /** @param {string} v */
  const at = (v) => /** @type {number} */ (low.get(v));

  /** @param {string} v */
  const visit = (v) => {
    index.set(v, nextIndex);
    low.set(v, nextIndex);
    nextIndex += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(at(v), at(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(at(v), /** @type {number} */ (index.get(w))));
      }
    }
    if (low.get(v) === index.get(v)) {
      /** @type {string[]} */
      const component = [];
      let w;
      do {
        w = /** @type {string} */ (stack.pop());
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };

  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

/**
 * The cycles of one project directory, paths relative to `root`.
 * @param {string} projectDir
 * @param {string} root
 * @returns {string[][]}
 */
function importCyclesIn(projectDir, root) {
  return findCycles(buildGraph(listSources(projectDir))).map((c) => c.map((f) => relative(root, f)));
}

/** The `src` folder of every app and lib. */
function projectDirs() {
  return ['apps', 'libs'].flatMap((group) =>
    readdirSync(join(ROOT, group), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(ROOT, group, d.name, 'src')),
  );
}

module.exports = { listSources, relativeImports, importCyclesIn, projectDirs };

if (require.main === module) {
  const dirs = projectDirs();
  const cycles = dirs.flatMap((dir) => importCyclesIn(dir, ROOT));
  for (const files of cycles) console.error(`import cycle: ${files.join(' <-> ')}`);
  if (cycles.length > 0) {
    console.error(`${cycles.length} import cycles: move what both sides need into a file of its own`);
    process.exitCode = 1;
  } else {
    console.log(`import cycles: none in ${dirs.length} projects (.ts and .tsx, type-only imports included)`);
  }
}
