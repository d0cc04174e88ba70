import { posix } from 'node:path';
import { ToolError } from '../tool-error';

export type MemoryScope = 'user' | 'shared';

/** A memory document's address: `user-memory/<key>` (the caller's) or `shared-memory/<key>` (everyone's). */
export interface MemoryPath {
  scope: MemoryScope;
  /** Normalised path below the scope's root; '' for the root itself (list_files). */
  key: string;
  /** How the model names it (`user-memory/notes/a.md`). */
  virtual: string;
}

const PREFIX: Record<MemoryScope, string> = { user: 'user-memory', shared: 'shared-memory' };
export const MEMORY_KEY_MAX = 512;

/**
 * Parses a memory path lexically. `..` may not climb out of the scope's root; NUL bytes, absolute
 * keys and over-long keys are refused with a sentence naming the path.
 */
export function parseMemoryPath(path: string): MemoryPath {
  if (path.includes('\0')) throw new ToolError('invalid_argument', `path contains a NUL byte: ${JSON.stringify(path)}`);
  const m = /^(user-memory|shared-memory)(?:\/(.*))?$/.exec(path);
  if (!m) throw new ToolError('invalid_argument', `not a memory path: ${path}`);
  const scope: MemoryScope = m[1] === 'user-memory' ? 'user' : 'shared';
  const rest = m[2] ?? '';
  const normalised = rest === '' ? '' : posix.normalize(rest).replace(/\/+$/, '');
  if (normalised === '.' || normalised === '') return { scope, key: '', virtual: PREFIX[scope] };
  if (normalised.startsWith('../') || normalised === '..' || posix.isAbsolute(normalised))
    throw new ToolError('outside_workspace', `path escapes ${PREFIX[scope]}/: ${path}`);
  if (normalised.length > MEMORY_KEY_MAX)
    throw new ToolError('invalid_argument', `memory path too long (over ${MEMORY_KEY_MAX} characters): ${path}`);
  return { scope, key: normalised, virtual: `${PREFIX[scope]}/${normalised}` };
}

export function memoryVirtual(scope: MemoryScope, key: string): string {
  return key === '' ? PREFIX[scope] : `${PREFIX[scope]}/${key}`;
}
