/**
 * grep_files' `glob` as an RE2 expression (run by the pattern pool, linear in the path's length):
 * `*` any characters but `/`, `**` any characters, `**` then `/` any number of whole directories (none
 * included), `?` one character but `/`, `[abc]` / `[a-z]` / `[!abc]` one character of (or not of) a set, `{a,b}` one
 * of the alternatives (nestable). Repeated `**` + `/` collapse into one. A glob without `/` matches the
 * base name anywhere (`*.ts`); one with `/` matches the path relative to the search root.
 */

import { GLOB_MAX_CHARS } from '@skald/contracts';

/** Longest glob accepted (the expression's size, and so the matching cost per path, follows from it). */
export { GLOB_MAX_CHARS };

export class GlobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GlobError';
  }
}

export interface CompiledGlob {
  /** RE2 syntax, anchored at both ends. */
  source: string;
  /** Match the base name only (the glob has no `/`). */
  baseName: boolean;
}

const RE2_META = new Set(['\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$']);

function literal(c: string): string {
  return RE2_META.has(c) ? `\\${c}` : c;
}

export function globToRe2(glob: string): CompiledGlob {
  if (glob.length > GLOB_MAX_CHARS)
    throw new GlobError(`the glob is ${glob.length} characters long; the limit is ${GLOB_MAX_CHARS}`);
  if (glob.includes('\0')) throw new GlobError('the glob contains a NUL character');
  let out = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        i++;
        if (glob[i + 1] === '/') {
          i++;
          // `**/**/` … is one `**/`.
          while (glob.startsWith('**/', i + 1)) i += 3;
          out += '(?:.*/)?';
        } else out += '.*';
      } else {
        out += '[^/]*';
      }
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) out += '\\[';
      else {
        let body = glob.slice(i + 1, end);
        const negated = body.startsWith('!') || body.startsWith('^');
        if (negated) body = body.slice(1);
        // Inside a set every character is itself, except a `-` between two (a range).
        const set = [...body]
          .map((ch, k, all) =>
            ch === '-' && k > 0 && k < all.length - 1 ? '-' : /[\\\]^[-]/.test(ch) ? `\\${ch}` : ch,
          )
          .join('');
        out += negated ? `[^/${set}]` : `[${set}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      out += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      out += ')';
    } else if (c === ',' && braces > 0) out += '|';
    else out += literal(c);
  }
  return { source: `^${out}${')'.repeat(braces)}$`, baseName: !glob.includes('/') };
}

/** The part of a path relative to the search root that a compiled glob is matched against. */
export function globSubject(glob: CompiledGlob, relPath: string): string {
  return glob.baseName ? relPath.slice(relPath.lastIndexOf('/') + 1) : relPath;
}
