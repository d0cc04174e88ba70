/** Text helpers of the read-side tools: binary detection, `cat -n` numbering, line capping. */

/** A file is binary when its first 8 KiB hold a NUL byte or are mostly control characters (git's heuristic, a bit wider). */
export function looksBinary(buf: Buffer): boolean {
  const n = Math.min(buf.length, 8192);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const b = buf[i];
    if (b === 0) return true;
    if (b < 7 || (b > 13 && b < 32 && b !== 27)) control++;
  }
  return n > 0 && control / n > 0.1;
}

/** Lines without their endings (a trailing `\r` is dropped for display). */
export function displayLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

export const MAX_LINE_CHARS = 2000;

/** One line as `cat -n` prints it: the number right-aligned in 6, a tab, the (capped) text. */
export function numbered(lineNo: number, text: string): string {
  const shown =
    text.length > MAX_LINE_CHARS
      ? `${text.slice(0, MAX_LINE_CHARS)}… [line cut: ${text.length - MAX_LINE_CHARS} more characters]`
      : text;
  return `${String(lineNo).padStart(6, ' ')}\t${shown}`;
}

/**
 * A glob as a RegExp: `*` (no `/`), `**` (any depth), `?`, `[…]`, `{a,b}`. A glob without `/`
 * matches the base name anywhere (`*.ts`), one with `/` the path relative to the search root.
 */
export function globMatcher(glob: string): (relPath: string) => boolean {
  const re = new RegExp(`^${globToRegExp(glob)}$`);
  if (!glob.includes('/')) return (rel) => re.test(rel.slice(rel.lastIndexOf('/') + 1));
  return (rel) => re.test(rel);
}

function globToRegExp(glob: string): string {
  let out = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        i++;
        if (glob[i + 1] === '/') {
          i++;
          out += '(?:.*/)?';
        } else out += '.*';
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) out += '\\[';
      else {
        let cls = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        if (cls.startsWith('!')) cls = `^${cls.slice(1)}`;
        out += `[${cls}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      out += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      out += ')';
    } else if (c === ',' && braces > 0) out += '|';
    else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return out + ')'.repeat(braces);
}
