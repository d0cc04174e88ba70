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
