'use strict';
// Jest's module runtime with V8's code cache. Every test file gets a fresh module registry, so a worker compiles the
// same modules (zod, TypeORM, Nest, the contracts) again for each file it runs. This runtime keeps each compiled
// module's code cache in the worker, keyed by file name and checked against the exact source, and hands it to V8 on
// the next compile of that file; V8 checks it as well and compiles afresh when it does not fit. What a module does
// when it runs is unchanged: each test file still runs every module anew.
//
// Jest 30 compiles in its runtime's `ModuleExecutor` (`runtime.executor.compile`), which is not a public extension
// point: when an upgrade moves it, this file fails loudly instead of silently doing nothing.
const vm = require('node:vm');
const { default: Runtime } = require('jest-runtime');

/** filename → { source, data }: the code cache of the last compile of that file in this worker. */
const codeCache = new Map();
/** Bound on the cache: a worker of the unit project loads about four thousand modules. */
const MAX_MODULES = 20_000;

function cachedCompile(executor, jestCompile, scriptSource, filename) {
  const vmContext = executor.environment.getVmContext();
  if (vmContext == null || executor.resolution.isCoreModule(filename)) return jestCompile(scriptSource, filename);
  const hit = codeCache.get(filename);
  const cachedData = hit !== undefined && hit.source === scriptSource ? hit.data : undefined;
  let fn;
  try {
    fn = vm.compileFunction(scriptSource, executor.injectedModuleParameters, {
      filename,
      cachedData,
      produceCachedData: cachedData === undefined,
      importModuleDynamically: (specifier, _fn, importAttributes, ...rest) =>
        executor.dynamicImport(specifier, filename, vmContext, importAttributes, rest[0]),
      parsingContext: vmContext,
    });
  } catch {
    // Jest's own compile names the syntax error (and ES module syntax) as it should.
    return jestCompile(scriptSource, filename);
  }
  if (cachedData === undefined && fn.cachedData !== undefined && codeCache.size < MAX_MODULES)
    codeCache.set(filename, { source: scriptSource, data: fn.cachedData });
  return fn;
}

class CodeCacheRuntime extends Runtime {
  constructor(...args) {
    super(...args);
    const executor = this.executor;
    if (typeof executor?.compile !== 'function' || typeof executor.dynamicImport !== 'function')
      throw new Error(
        'test/setup/code-cache-runtime.js: jest-runtime no longer compiles in `executor.compile`; update it',
      );
    const jestCompile = executor.compile.bind(executor);
    executor.compile = (scriptSource, filename) => cachedCompile(executor, jestCompile, scriptSource, filename);
  }
}

module.exports = CodeCacheRuntime;
