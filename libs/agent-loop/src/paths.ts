import { isRecord } from './json';

const MEMORY_PREFIXES = ['user-memory/', 'shared-memory/'];

/** Lexical POSIX normalisation (`.`/`..`/duplicate slashes), never above `/`. */
export function normalizePosix(path: string): string {
  const absolute = path.startsWith('/');
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!absolute) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  return absolute ? `/${joined}` : joined || '.';
}

/**
 * A memory document, named as the shared path resolver (`@skald/contracts` tool-paths) names one:
 * a relative path that starts in, or normalises into, `user-memory` / `shared-memory`
 * (`./user-memory/x` included). The loop may not import contracts; tool-paths.spec.ts checks
 * that both agree.
 */
export function isMemoryPath(path: string): boolean {
  if (path.startsWith('/')) return false;
  const starts = (p: string) => MEMORY_PREFIXES.some((m) => p === m.slice(0, -1) || p.startsWith(m));
  const first = path.split('/').find((s) => s !== '' && s !== '.') ?? '';
  return starts(first) || starts(normalizePosix(path));
}

/**
 * Working-directory injection (spec: effective_args): a relative `path` becomes absolute
 * against the session's working directory; `execute_cmd` gets `workdir` unless the model set
 * one. Memory paths are never rewritten. Non-object arguments are returned unchanged.
 */
export function injectWorkingDirectory(name: string, args: unknown, workingDirectory: string | null): unknown {
  if (!workingDirectory || !isRecord(args)) return args;
  const out: Record<string, unknown> = { ...args };
  const path = out['path'];
  if (typeof path === 'string' && path !== '' && !path.startsWith('/') && !isMemoryPath(path)) {
    out['path'] = normalizePosix(`${workingDirectory}/${path}`);
  }
  if (name === 'execute_cmd' && (typeof out['workdir'] !== 'string' || out['workdir'] === '')) {
    out['workdir'] = workingDirectory;
  }
  return out;
}
