import { MEMORY_ROOT, MemoryScope, resolvePathAgainst, type ToolPath, WORKSPACE_ROOT } from '@skald/contracts';
import { ToolError } from '../tool-error';
import { orThrow } from '../workspace/workspace-path';

export { MemoryScope };

/** A memory document's address: `user-memory/<key>` (the caller's) or `shared-memory/<key>` (everyone's). */
export interface MemoryPath {
  scope: MemoryScope;
  /** Normalised path below the scope's root; '' for the root itself (list_files). */
  key: string;
  /** How the model names it (`user-memory/notes/a.md`). */
  virtual: string;
}

/**
 * Parses a memory path with the shared resolver (the gate's): `..` may not climb out of the scope's
 * root; NUL bytes, non-memory paths and over-long keys are refused with a sentence naming the path.
 */
export function parseMemoryPath(path: ToolPath): MemoryPath {
  const base = { kind: 'workspace', virtual: WORKSPACE_ROOT, segments: [] } as const;
  const t = orThrow(resolvePathAgainst(path, base));
  if (t.kind !== 'memory') throw new ToolError('invalid_argument', `not a memory path: ${path}`);
  return { scope: t.scope, key: t.key, virtual: t.virtual };
}

export function memoryVirtual(scope: MemoryScope, key: string): string {
  return key === '' ? MEMORY_ROOT[scope] : `${MEMORY_ROOT[scope]}/${key}`;
}
