// File-level import cycles inside one project, found with the TypeScript compiler API.
//
// Cycles between projects are @nx/enforce-module-boundaries' job (it reports circular project
// dependencies); this covers what it cannot see: `a.ts -> b.ts -> a.ts` inside one app or lib, which at run
// time hands one of them an undefined import (the classic cause of Nest's "cannot resolve dependency"
// and of `forwardRef`). Type-only imports (`import type`, `export type ... from`, imports whose every
// binding is `type`) are erased by the compiler and create no run-time cycle, so they are not edges.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  resolveJsonModule: true,
};

/** Every .ts source under `dir` (no declaration files, no build output). */
export function listSources(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      if (name === 'node_modules' || name === 'dist') continue;
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(full);
    }
  };
  walk(dir);
  return out.sort();
}

function isTypeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import './side-effect'` runs code
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  if (!bindings) return false;
  if (ts.isNamespaceImport(bindings)) return false;
  return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

function isTypeOnlyExport(node: ts.ExportDeclaration): boolean {
  if (node.isTypeOnly) return true;
  const clause = node.exportClause;
  return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0
    ? clause.elements.every((e) => e.isTypeOnly)
    : false;
}

/** Relative module specifiers of a file's run-time imports and re-exports. */
export function runtimeRelativeImports(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const specifiers: string[] = [];
  const add = (expr: ts.Expression | undefined): void => {
    if (expr && ts.isStringLiteral(expr) && expr.text.startsWith('.')) specifiers.push(expr.text);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      if (!isTypeOnlyImport(statement)) add(statement.moduleSpecifier);
    } else if (ts.isExportDeclaration(statement)) {
      if (!isTypeOnlyExport(statement)) add(statement.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(statement)) {
      const ref = statement.moduleReference;
      if (!statement.isTypeOnly && ts.isExternalModuleReference(ref)) add(ref.expression);
    }
  }
  return specifiers;
}

/** Import graph of the given files: file -> files it imports at run time (only files in the set). */
export function buildGraph(files: readonly string[]): Map<string, string[]> {
  const inSet = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const spec of runtimeRelativeImports(file, readFileSync(file, 'utf8'))) {
      const resolved = ts.resolveModuleName(spec, file, COMPILER_OPTIONS, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved && inSet.has(resolved)) targets.add(resolved);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let nextIndex = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];

  const visit = (v: string): void => {
    index.set(v, nextIndex);
    low.set(v, nextIndex);
    nextIndex += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };

  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

/** Human-readable cycles of one project directory, paths relative to `root`. */
export function importCyclesIn(projectDir: string, root: string): string[][] {
  return findCycles(buildGraph(listSources(projectDir))).map((c) => c.map((f) => relative(root, f)));
}
