/**
 * The pure edit computations of the file-write tools: current content + arguments → new content.
 * No I/O, no Nest, no Skald imports, so that the approval service can compute the exact preview of
 * a pending write (`pending_write.new_content`) with the very code the tool runner applies.
 * (Today this lives in the tool runner; a shared library is the home once the preview is wired.)
 *
 * Every function throws `EditError` with a sentence for the model; `path` is only used in it.
 */

export class EditError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EditError';
  }
}

export interface EditResult {
  content: string;
  /** One line for the model: what changed. */
  summary: string;
}

/** The line ending a file uses: CRLF when its first line ends with one, else LF. */
export function lineEnding(text: string): '\n' | '\r\n' {
  const nl = text.indexOf('\n');
  return nl > 0 && text[nl - 1] === '\r' ? '\r\n' : '\n';
}

/** Lines with their endings kept: `join('')` gives the text back exactly. */
export function splitKeepEnds(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', start)) {
    out.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

/** Number of lines as `cat -n` counts them (a final line without newline counts). */
export function countLines(text: string): number {
  return splitKeepEnds(text).length;
}

function occurrences(haystack: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) at.push(i);
  return at;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** Replaces without `String.replace`, whose `$&`-patterns would corrupt the new text. */
function spliceAll(text: string, at: number[], oldLen: number, replacement: string): string {
  let out = '';
  let prev = 0;
  for (const i of at) {
    out += text.slice(prev, i) + replacement;
    prev = i + oldLen;
  }
  return out + text.slice(prev);
}

/** `edit_file`: replaces `old` by `new`; `old` must occur exactly once unless `replaceAll`. */
export function applyEdit(
  current: string,
  args: { old: string; new: string; replaceAll?: boolean },
  path: string,
): EditResult {
  if (args.old === '')
    throw new EditError(
      `edit_file: \`old\` is empty; give the exact text to replace in ${path} (use write_file to replace the whole file)`,
    );
  if (args.old === args.new)
    throw new EditError(`edit_file: \`old\` and \`new\` are identical; nothing would change in ${path}`);
  let oldText = args.old;
  let newText = args.new;
  let at = occurrences(current, oldText);
  // A model usually writes LF; accept it for a CRLF file and keep the file's line endings.
  if (at.length === 0 && lineEnding(current) === '\r\n' && oldText.includes('\n') && !oldText.includes('\r\n')) {
    oldText = oldText.replace(/\n/g, '\r\n');
    newText = newText.replace(/\r?\n/g, '\r\n');
    at = occurrences(current, oldText);
  }
  if (at.length === 0) {
    throw new EditError(
      `edit_file: \`old\` was not found in ${path}. Read the file again and copy the text exactly, including whitespace and indentation.`,
    );
  }
  if (at.length > 1 && !args.replaceAll) {
    const lines = at.slice(0, 10).map((i) => lineOf(current, i));
    throw new EditError(
      `edit_file: \`old\` occurs ${at.length} times in ${path} (at lines ${lines.join(', ')}${at.length > 10 ? ', …' : ''}); ` +
        'include more surrounding text to make it unique, or set replace_all to true',
    );
  }
  const content = spliceAll(current, at, oldText.length, newText);
  const firstLine = lineOf(current, at[0]);
  const summary =
    at.length === 1
      ? `Replaced 1 occurrence in ${path} (line ${firstLine})`
      : `Replaced ${at.length} occurrences in ${path} (first at line ${firstLine})`;
  return { content, summary };
}

/** Text as whole lines in the file's line ending, each terminated. */
function asLines(text: string, eol: string): string {
  const normalised = eol === '\r\n' ? text.replace(/\r?\n/g, '\r\n') : text;
  return normalised.endsWith('\n') ? normalised : normalised + eol;
}

/** `insert_at_line`: inserts `content` as whole lines before or after line `line` (1-based). */
export function applyInsert(
  current: string,
  args: { line: number; content: string; position?: 'before' | 'after' },
  path: string,
): EditResult {
  const position = args.position ?? 'after';
  const lines = splitKeepEnds(current);
  const n = lines.length;
  if (!Number.isInteger(args.line)) throw new EditError(`insert_at_line: line must be a whole number`);
  if (n === 0) {
    if (args.line !== 0 && args.line !== 1) throw new EditError(`insert_at_line: ${path} is empty; use line 1`);
  } else if (args.line < 1 || args.line > n) {
    throw new EditError(
      `insert_at_line: line ${args.line} is out of range; ${path} has ${n} line${n === 1 ? '' : 's'} (1–${n})`,
    );
  }
  const eol = lineEnding(current);
  const index = n === 0 ? 0 : position === 'before' ? args.line - 1 : args.line;
  if (index === n && n > 0 && !lines[n - 1].endsWith('\n')) lines[n - 1] += eol;
  const block = asLines(args.content, eol);
  lines.splice(index, 0, block);
  const added = countLines(block);
  const where = n === 0 ? `into the empty file ${path}` : `${position} line ${args.line} of ${path}`;
  return { content: lines.join(''), summary: `Inserted ${added} line${added === 1 ? '' : 's'} ${where}` };
}

/** `replace_lines`: replaces lines `from`..`to` (1-based, inclusive) by `new` (empty deletes them). */
export function applyReplaceLines(
  current: string,
  args: { fromLine: number; toLine: number; new: string },
  path: string,
): EditResult {
  const lines = splitKeepEnds(current);
  const n = lines.length;
  const { fromLine, toLine } = args;
  if (!Number.isInteger(fromLine) || !Number.isInteger(toLine))
    throw new EditError('replace_lines: from_line and to_line must be whole numbers');
  if (n === 0) throw new EditError(`replace_lines: ${path} is empty; use write_file or insert_at_line`);
  if (fromLine < 1 || fromLine > n)
    throw new EditError(
      `replace_lines: from_line ${fromLine} is out of range; ${path} has ${n} line${n === 1 ? '' : 's'} (1–${n})`,
    );
  if (toLine < fromLine || toLine > n) {
    throw new EditError(
      `replace_lines: to_line ${toLine} must be between from_line (${fromLine}) and the last line (${n}) of ${path}`,
    );
  }
  const eol = lineEnding(current);
  let block = args.new === '' ? '' : asLines(args.new, eol);
  const lastHadNoEol = toLine === n && !lines[n - 1].endsWith('\n');
  if (lastHadNoEol && block.endsWith(eol) && !args.new.endsWith('\n')) block = block.slice(0, -eol.length);
  lines.splice(fromLine - 1, toLine - fromLine + 1, block);
  let content = lines.join('');
  // Deleting the last lines must not leave the previous line glued to nothing: keep the file's ending style.
  if (block === '' && lastHadNoEol && content.endsWith(eol)) content = content.slice(0, -eol.length);
  const removed = toLine - fromLine + 1;
  const added = block === '' ? 0 : countLines(block);
  return {
    content,
    summary: `Replaced lines ${fromLine}–${toLine} of ${path} (${removed} line${removed === 1 ? '' : 's'} removed, ${added} added)`,
  };
}

/**
 * `append_file`: appends `content` at the end. When the file does not end with a line break, one is
 * added first so the new text starts on a line of its own.
 */
export function applyAppend(current: string, args: { content: string }, path: string): EditResult {
  const needsBreak = current.length > 0 && !current.endsWith('\n');
  const content = current + (needsBreak ? lineEnding(current) : '') + args.content;
  const bytes = Buffer.byteLength(args.content, 'utf8');
  return {
    content,
    summary: `Appended ${bytes} byte${bytes === 1 ? '' : 's'} to ${path}${needsBreak ? ' (after adding a line break at the old end)' : ''}`,
  };
}
