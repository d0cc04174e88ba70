/**
 * A small POSIX-shell reader for the approval gate: it finds every simple command a line would run
 * (through `;` `&&` `||` `|` `&` newlines, subshells, `{ …; }` groups, `$( )`, backticks, process
 * substitution and unquoted here-doc bodies) so that each one can be matched against the rules.
 * It never executes or expands anything. Whatever it does not understand (control-flow keywords,
 * function definitions, arithmetic, unbalanced quotes) fails the whole line: the gate then asks.
 */

export interface ShellCommand {
  /** The words as the shell would see them after quote removal (expansions left as written). */
  argv: string[];
  /** Words (by index) that contain an unquoted or double-quoted `$`/`~` expansion. */
  expanded: boolean[];
  /** `NAME=value` words before the command name. */
  assignments: string[];
  /** Redirection targets that write a file (`>`, `>>`, `>|`, `&>`, `<>`), other than /dev/null-like ones. */
  writes: string[];
}

export type ShellParse = { ok: true; commands: ShellCommand[] } | { ok: false; reason: string };

class ParseError extends Error {}

const KEYWORDS = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'for',
  'while',
  'until',
  'do',
  'done',
  'case',
  'esac',
  'select',
  'function',
  'coproc',
]);
const HARMLESS_TARGETS = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);
const MAX_DEPTH = 16;

interface Word {
  text: string;
  expanded: boolean;
  /** True when any part was quoted (a quoted word is never an operator or keyword). */
  quoted: boolean;
}

type Token =
  | { kind: 'word'; word: Word }
  | { kind: 'op'; op: string }
  | { kind: 'redir'; op: string; fd?: string }
  | { kind: 'newline' };

export function parseShell(line: string): ShellParse {
  try {
    const commands: ShellCommand[] = [];
    new Reader(line, commands, 0).parseProgram();
    return { ok: true, commands };
  } catch (e) {
    if (e instanceof ParseError) return { ok: false, reason: e.message };
    throw e;
  }
}

class Reader {
  private pos = 0;
  private pendingHeredocs: Array<{ delim: string; strip: boolean; expand: boolean }> = [];

  constructor(
    private readonly src: string,
    private readonly out: ShellCommand[],
    private readonly depth: number,
  ) {
    if (depth > MAX_DEPTH) throw new ParseError('nesting too deep');
  }

  /** The whole input as a list of commands. */
  parseProgram(): void {
    const end = this.parseList(null);
    if (end !== null) throw new ParseError(`unexpected ${end}`);
  }

  /**
   * Reads commands until `closer` (`)` or `}`) or the end of input. Returns the closer that ended
   * it, or null at the end of input.
   */
  private parseList(closer: ')' | '}' | null): string | null {
    let cmd = this.newCommand();
    let expectCommand = true;
    /** After `&&`, `||`, `|`: a command must follow (possibly on the next line). */
    let needOperand = false;
    const flush = (): void => {
      if (cmd.argv.length > 0 || cmd.assignments.length > 0 || cmd.writes.length > 0) this.out.push(cmd);
      cmd = this.newCommand();
    };
    for (;;) {
      const t = this.next();
      if (t === null) {
        flush();
        if (needOperand) throw new ParseError('the line ends after an operator');
        if (closer !== null) throw new ParseError(`missing ${closer}`);
        return null;
      }
      if (t.kind === 'newline') {
        flush();
        this.readHeredocBodies();
        expectCommand = true;
        continue;
      }
      if (t.kind === 'op') {
        if (t.op === ')') {
          if (closer !== ')') throw new ParseError('unexpected )');
          if (needOperand) throw new ParseError('unexpected ) after an operator');
          flush();
          return ')';
        }
        if (t.op === '(') {
          if (cmd.argv.length > 0) throw new ParseError('function definitions are not supported');
          if (!expectCommand) throw new ParseError('unexpected (');
          this.parseList(')');
          expectCommand = false;
          needOperand = false;
          continue;
        }
        if (t.op === ';;' || t.op === ';&') throw new ParseError(`unsupported ${t.op}`);
        // ; && || | |& &
        if (cmd.argv.length === 0 && cmd.assignments.length === 0 && cmd.writes.length === 0 && expectCommand)
          throw new ParseError(`unexpected ${t.op}`);
        flush();
        expectCommand = true;
        needOperand = t.op === '&&' || t.op === '||' || t.op === '|' || t.op === '|&';
        continue;
      }
      if (t.kind === 'redir') {
        this.readRedirection(t.op, cmd);
        continue;
      }
      const w = t.word;
      if (cmd.argv.length === 0 && !w.quoted) {
        if (w.text === '{' && expectCommand && cmd.assignments.length === 0) {
          const end = this.parseList('}');
          if (end !== '}') throw new ParseError('missing }');
          expectCommand = false;
          needOperand = false;
          continue;
        }
        if (w.text === '}') {
          if (closer !== '}' || needOperand) throw new ParseError('unexpected }');
          flush();
          return '}';
        }
        if (w.text === '!' && expectCommand) continue;
        if (KEYWORDS.has(w.text)) throw new ParseError(`shell keyword "${w.text}" is not supported`);
        if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w.text)) {
          cmd.assignments.push(w.text);
          needOperand = false;
          continue;
        }
      }
      if (!expectCommand && cmd.argv.length === 0 && cmd.assignments.length === 0)
        throw new ParseError(`unexpected word after a group: ${w.text}`);
      cmd.argv.push(w.text);
      cmd.expanded.push(w.expanded);
      expectCommand = false;
      needOperand = false;
    }
  }

  private newCommand(): ShellCommand {
    return { argv: [], expanded: [], assignments: [], writes: [] };
  }

  private readRedirection(op: string, cmd: ShellCommand): void {
    const t = this.next();
    if (t === null || t.kind !== 'word') throw new ParseError(`missing target after ${op}`);
    if (op === '<<' || op === '<<-') {
      this.pendingHeredocs.push({ delim: t.word.text, strip: op === '<<-', expand: !t.word.quoted });
      return;
    }
    if (op === '>&' || op === '<&') {
      // fd duplication (2>&1, >&2) or closing (>&-); a file target (>&file) writes it.
      if (/^(\d+|-)$/.test(t.word.text)) return;
      if (op === '>&') cmd.writes.push(t.word.text);
      return;
    }
    if (['>', '>>', '>|', '&>', '&>>', '<>'].includes(op) && !HARMLESS_TARGETS.has(t.word.text))
      cmd.writes.push(t.word.text);
  }

  /** After a newline: consumes the here-doc bodies announced on the line just read. */
  private readHeredocBodies(): void {
    const docs = this.pendingHeredocs;
    this.pendingHeredocs = [];
    for (const doc of docs) {
      const bodyLines: string[] = [];
      for (;;) {
        if (this.pos >= this.src.length) throw new ParseError(`here-document "${doc.delim}" is not terminated`);
        const nl = this.src.indexOf('\n', this.pos);
        const end = nl === -1 ? this.src.length : nl;
        const raw = this.src.slice(this.pos, end);
        this.pos = nl === -1 ? this.src.length : nl + 1;
        const line = doc.strip ? raw.replace(/^\t+/, '') : raw;
        if (line === doc.delim) break;
        bodyLines.push(raw);
      }
      if (doc.expand) this.scanExpansions(bodyLines.join('\n'));
    }
  }

  /** Unquoted here-doc body: like a double-quoted string, it runs `$( )` and backticks. */
  private scanExpansions(text: string): void {
    const r = new Reader(text, this.out, this.depth + 1);
    while (r.pos < r.src.length) {
      const c = r.src[r.pos];
      if (c === '\\') r.pos += 2;
      else if (c === '$' || c === '`') r.readDollarOrBacktick({ text: '', expanded: false, quoted: false });
      else r.pos++;
    }
  }

  private peek(offset = 0): string | undefined {
    return this.src[this.pos + offset];
  }

  private next(): Token | null {
    // skip blanks, line continuations and comments
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t' || c === '\r') this.pos++;
      else if (c === '\\' && this.peek(1) === '\n') this.pos += 2;
      else if (c === '#') {
        while (this.pos < this.src.length && this.peek() !== '\n') this.pos++;
      } else break;
    }
    if (this.pos >= this.src.length) return null;
    const c = this.peek() as string;
    if (c === '\n') {
      this.pos++;
      return { kind: 'newline' };
    }
    const three = this.src.slice(this.pos, this.pos + 3);
    const two = this.src.slice(this.pos, this.pos + 2);
    if (three === '&>>' || three === '<<-' || three === '<<<') {
      this.pos += 3;
      if (three === '<<<') return { kind: 'redir', op: '<' };
      return { kind: 'redir', op: three };
    }
    if (two === '<(' || two === '>(') {
      this.pos += 2;
      new Reader(this.src, this.out, this.depth + 1).takeOver(this, ')');
      return { kind: 'word', word: { text: '<(…)', expanded: true, quoted: false } };
    }
    if (['&&', '||', ';;', ';&', '|&'].includes(two)) {
      this.pos += 2;
      return { kind: 'op', op: two };
    }
    if (['>>', '>|', '&>', '>&', '<&', '<<', '<>'].includes(two)) {
      this.pos += 2;
      return { kind: 'redir', op: two };
    }
    if (c === ';' || c === '&' || c === '|' || c === '(' || c === ')') {
      this.pos++;
      return { kind: 'op', op: c };
    }
    if (c === '>' || c === '<') {
      this.pos++;
      return { kind: 'redir', op: c };
    }
    // an fd number directly before a redirection: 2>file, 2>&1
    const fd = /^(\d+)(?=[<>])/.exec(this.src.slice(this.pos, this.pos + 4));
    if (fd) {
      this.pos += fd[1].length;
      const r = this.next();
      if (r?.kind !== 'redir') throw new ParseError('bad redirection');
      return { ...r, fd: fd[1] };
    }
    return { kind: 'word', word: this.readWord() };
  }

  /** Runs a nested reader over our source from our position up to `closer`, then continues after it. */
  private takeOver(parent: Reader, closer: ')'): void {
    this.pos = parent.pos;
    const end = this.parseList(closer);
    if (end !== closer) throw new ParseError(`missing ${closer}`);
    parent.pos = this.pos;
  }

  private readWord(): Word {
    const w: Word = { text: '', expanded: false, quoted: false };
    for (;;) {
      const c = this.peek();
      if (c === undefined || /[\s;&|()<>]/.test(c)) break;
      if (c === '\\') {
        const n = this.peek(1);
        if (n === undefined) throw new ParseError('trailing backslash');
        this.pos += 2;
        if (n !== '\n') w.text += n;
        w.quoted = true;
        continue;
      }
      if (c === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        if (end === -1) throw new ParseError('unterminated single quote');
        w.text += this.src.slice(this.pos + 1, end);
        this.pos = end + 1;
        w.quoted = true;
        continue;
      }
      if (c === '"') {
        this.pos++;
        this.readDoubleQuoted(w);
        w.quoted = true;
        continue;
      }
      if (c === '$' || c === '`') {
        this.readDollarOrBacktick(w);
        continue;
      }
      if (c === '~' && w.text === '') w.expanded = true;
      w.text += c;
      this.pos++;
    }
    return w;
  }

  private readDoubleQuoted(w: Word): void {
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new ParseError('unterminated double quote');
      if (c === '"') {
        this.pos++;
        return;
      }
      if (c === '\\') {
        const n = this.peek(1);
        if (n === undefined) throw new ParseError('unterminated double quote');
        if ('$`"\\\n'.includes(n)) {
          if (n !== '\n') w.text += n;
        } else w.text += `\\${n}`;
        this.pos += 2;
        continue;
      }
      if (c === '$' || c === '`') {
        this.readDollarOrBacktick(w);
        continue;
      }
      w.text += c;
      this.pos++;
    }
  }

  /** `$name`, `${…}`, `$( … )` (its commands are collected), `$(( ))` (refused), `` `…` ``. */
  private readDollarOrBacktick(w: Word): void {
    const c = this.peek();
    if (c === '`') {
      let i = this.pos + 1;
      let inner = '';
      for (;;) {
        const ch = this.src[i];
        if (ch === undefined) throw new ParseError('unterminated backtick');
        if (ch === '\\' && (this.src[i + 1] === '`' || this.src[i + 1] === '\\' || this.src[i + 1] === '$')) {
          inner += this.src[i + 1];
          i += 2;
          continue;
        }
        if (ch === '`') break;
        inner += ch;
        i++;
      }
      this.pos = i + 1;
      new Reader(inner, this.out, this.depth + 1).parseProgram();
      w.text += '`…`';
      w.expanded = true;
      return;
    }
    const n = this.peek(1);
    if (n === '(' && this.peek(2) === '(') throw new ParseError('arithmetic expansion is not supported');
    if (n === '(') {
      this.pos += 2;
      new Reader(this.src, this.out, this.depth + 1).takeOver(this, ')');
      w.text += '$(…)';
      w.expanded = true;
      return;
    }
    if (n === '{') {
      const end = this.src.indexOf('}', this.pos + 2);
      if (end === -1) throw new ParseError('unterminated ${');
      const inner = this.src.slice(this.pos + 2, end);
      if (/[`$(]/.test(inner)) throw new ParseError('nested expansion in ${…} is not supported');
      w.text += this.src.slice(this.pos, end + 1);
      w.expanded = true;
      this.pos = end + 1;
      return;
    }
    if (n !== undefined && /[A-Za-z0-9_@*#?$!-]/.test(n)) {
      let i = this.pos + 1;
      if (/[A-Za-z_]/.test(n)) while (i < this.src.length && /[A-Za-z0-9_]/.test(this.src[i])) i++;
      else i++;
      w.text += this.src.slice(this.pos, i);
      w.expanded = true;
      this.pos = i;
      return;
    }
    if (n === "'") throw new ParseError("$'…' quoting is not supported");
    w.text += '$';
    this.pos++;
  }
}

/** Commands that run other commands: an allow rule never matches them. */
const WRAPPERS = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'fish',
  'csh',
  'tcsh',
  'busybox',
  'eval',
  'exec',
  'env',
  'xargs',
  'sudo',
  'doas',
  'su',
  'nohup',
  'timeout',
  'nice',
  'ionice',
  'time',
  'command',
  'builtin',
  'source',
  '.',
  'parallel',
  'watch',
  'strace',
  'chroot',
  'setsid',
  'stdbuf',
  'unbuffer',
  'script',
  'flock',
  'trap',
]);
const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);

/**
 * Why a command can never be matched by an allow rule, or null: a wrapper that runs another
 * command, `find -exec`, a command name that is itself an expansion, assignments before the name
 * (`PATH=… cmd`), or a redirection that writes a file.
 */
export function unallowableReason(cmd: ShellCommand): string | null {
  if (cmd.argv.length === 0) return 'no command name';
  const name = cmd.argv[0];
  if (cmd.expanded[0]) return `the command name ${name} is an expansion`;
  const base = name.includes('/') ? name.slice(name.lastIndexOf('/') + 1) : name;
  if (WRAPPERS.has(base)) return `${base} runs other commands`;
  if (base === 'find' && cmd.argv.some((a) => FIND_EXEC.has(a))) return 'find -exec runs other commands';
  if (cmd.assignments.length > 0) return 'variable assignments before a command';
  if (cmd.writes.length > 0) return `redirection writes ${cmd.writes[0]}`;
  return null;
}
