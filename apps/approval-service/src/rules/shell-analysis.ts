// Size: one walk over the syntax tree of tree-sitter-bash with the whitelist of node kinds it
// accepts; the walk and the whitelist change together, when the rule of what a line may hold does.
import { readFileSync } from 'node:fs';
import type { Language as TsLanguage, Node as TsNode, Parser as TsParser } from 'web-tree-sitter';

/**
 * What the approval gate reads out of a shell line, through tree-sitter-bash (a maintained
 * grammar, run as WebAssembly by web-tree-sitter). The gate only lets rules allow a line whose
 * syntax tree is made of a short whitelist of node kinds: simple commands of literal words and
 * quoted literals, joined by `&&` `||` `;` `|` or newlines, with plain file redirections. Every
 * byte of such a line is accounted for by a whitelisted node or by plain blanks between them, so
 * a character the grammar skips but a shell reads (CR, NBSP, VT, FF, U+2028, BOM) makes the line
 * need a human. Anything else — expansions, substitutions, globs, arithmetic, control flow,
 * functions, subshells, here-documents, background jobs, parse errors, an input over the size
 * bound or a parse over the time budget — needs a human whatever the rules say.
 */

export interface Redirection {
  /** `>`, `>>`, `<`, `>|`, `>&`, `<&`. */
  op: string;
  /** The file descriptor written before the operator, if any. */
  fd: string | null;
  /** The file (or, for `>&`/`<&`, the descriptor) the redirection names. */
  target: string;
}

export interface SimpleCommand {
  /** The words as the shell passes them to the program (quotes removed; nothing to expand). */
  argv: string[];
  /** `NAME=value` words before the command name. */
  assignments: string[];
  redirections: Redirection[];
}

export type ShellAnalysis = { kind: 'simple'; commands: SimpleCommand[] } | { kind: 'needs_human'; reason: string };

/** The largest line the gate parses; a longer one needs a human. */
export const MAX_LINE_BYTES = 64 * 1024;
/**
 * Time budget of one analysis (parse and tree walk, wall clock): past it the parse is cancelled or
 * the walk stops, and the line needs a human. So any input is answered in about this time.
 */
export const PARSE_BUDGET_MS = 40;
/** A line of more words than this needs a human (the tree of one command is built in one step). */
export const MAX_WORDS = 4096;
/** The walk looks at the clock every this many leaves. */
const CLOCK_EVERY = 64;

let parser: TsParser | null = null;
let loading: Promise<void> | null = null;

/** Loads the grammar once (about 150 ms); `analyzeCommand` needs a human until it is loaded. */
export function initShellParser(): Promise<void> {
  loading ??= (async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ts = require('web-tree-sitter') as typeof import('web-tree-sitter');
    await ts.Parser.init();
    const lang: TsLanguage = await ts.Language.load(
      readFileSync(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm')),
    );
    const p = new ts.Parser();
    p.setLanguage(lang);
    parser = p;
  })().catch((e: unknown) => {
    loading = null;
    throw e;
  });
  return loading;
}

const needs = (reason: string): ShellAnalysis => ({ kind: 'needs_human', reason });

/** Shell reserved words (bash and dash): as a command name they start syntax, not a program. */
const RESERVED = new Set([
  '!',
  '{',
  '}',
  '[[',
  ']]',
  'case',
  'coproc',
  'do',
  'done',
  'elif',
  'else',
  'esac',
  'fi',
  'for',
  'function',
  'if',
  'in',
  'select',
  'then',
  'time',
  'until',
  'while',
]);
/** Unquoted word characters with no meaning to either shell (no glob, tilde, brace, history, comment). */
const PLAIN_WORD = /^(?:[A-Za-z0-9_./:@%+,=-]|\\[\x20-\x7e])+$/;
/**
 * A descriptor dash and bash both read as one: a single unquoted digit. Dash takes only one digit
 * (`12<f` is the argument 12 and `<f`, `>&12` a syntax error); bash takes any int (`12<f` opens
 * descriptor 12, `99999999999<f` is an argument again).
 */
const FD = /^[0-9]$/;
/**
 * An unquoted word a shell may take as the descriptor of an operator glued after it: digits
 * (both shells) or `{name}` (bash allocates a descriptor and assigns it to name).
 */
const DESCRIPTOR_LIKE = /^(?:[0-9]+|\{[^{}]*\})$/;
/** Characters that end a word in front of an operator (the shells' blanks and metacharacters). */
const WORD_END = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
/** A line continuation counts as a blank only after a blank: `a\\<newline>b` is the one word `ab`. */
const BLANKS = /^(?:[ \t\n]|[ \t]\\\n)*$/;
const OPERATORS = new Set([';', '&&', '||', '|']);
const REDIRECT_OPS = new Set(['>', '>>', '<', '>|', '>&', '<&']);

/** Builtins that define what later words mean or run code given to them (`alias x=rm`, `trap CMD`, `let` arithmetic). */
const CODE_BUILTINS = new Set(['alias', 'trap', 'let', 'fc', 'bind', 'enable', 'complete', 'compgen']);
/**
 * Builtins that may evaluate a word as arithmetic or as a variable name with a subscript, where
 * bash runs `$( )` (`unset 'a[$(cmd)]'`, `read`, `printf -v`, `test -v`, `declare`): such a word
 * with `$` or a backquote in it needs a human. External programs get the same text as data.
 */
const EVALUATING_BUILTINS = new Set([
  'cd',
  'command',
  'declare',
  'typeset',
  'local',
  'export',
  'readonly',
  'unset',
  'shift',
  'getopts',
  'wait',
  'mapfile',
  'readarray',
  'read',
  'test',
  '[',
  'printf',
  'ulimit',
  'exit',
  'return',
  'set',
  'kill',
  'hash',
  'type',
  'builtin',
  'exec',
  'source',
  '.',
  'eval',
  'umask',
  'times',
  'jobs',
  'fg',
  'bg',
  'disown',
  'suspend',
  'break',
  'continue',
  'shopt',
  'dirs',
  'pushd',
  'popd',
  'caller',
  'history',
]);
const CODE_CHARS = /[$`]/;

class NotSimple extends Error {}

/**
 * The commands of a shell line, or why a human must read it. Never throws; bounded by
 * MAX_LINE_BYTES and PARSE_BUDGET_MS.
 */
export function analyzeCommand(line: string): ShellAnalysis {
  // One check reads the same line several times (the rules, each open bypass, the scopes a card
  // offers): the last line's analysis is kept. A needs-human answer of an unloaded parser is not.
  if (last && last.line === line) return last.analysis;
  const analysis = analyzeUncached(line);
  if (parser) last = { line, analysis };
  return analysis;
}
let last: { line: string; analysis: ShellAnalysis } | null = null;

function analyzeUncached(line: string): ShellAnalysis {
  if (typeof line !== 'string') return needs('the command is not a string');
  if (Buffer.byteLength(line, 'utf8') > MAX_LINE_BYTES)
    return needs(`the command line is longer than ${MAX_LINE_BYTES} bytes`);
  if (line.includes('\0')) return needs('the command line contains a NUL character');
  if (line.trim() === '') return needs('empty command line');
  if (countWords(line) > MAX_WORDS) return needs(`the command line has more than ${MAX_WORDS} words`);
  const p = parser;
  if (!p) return needs('the shell parser is not loaded yet');
  const deadline = performance.now() + PARSE_BUDGET_MS;
  const overBudget = (): boolean => performance.now() > deadline;
  let tree;
  try {
    p.reset();
    tree = p.parse(line, null, { progressCallback: overBudget as unknown as () => void });
  } catch {
    return needs('the command line cannot be parsed');
  }
  if (!tree) return needs(`parsing the command line took longer than ${PARSE_BUDGET_MS} ms`);
  try {
    const root = tree.rootNode;
    if (root.hasError) return needs('the command line cannot be parsed');
    const reader = new TreeReader(line, overBudget);
    reader.program(root);
    reader.checkCoverage();
    if (reader.commands.length === 0) return needs('the command line has no command');
    for (const c of reader.commands) {
      const name = c.argv[0];
      if (CODE_BUILTINS.has(name)) return needs(`the builtin ${name} runs or defines shell code`);
      if (c.assignments.some((a) => CODE_CHARS.test(a)))
        return needs('an assignment whose value a shell could later run ($ or backquote)');
      if (EVALUATING_BUILTINS.has(name) && c.argv.some((a) => CODE_CHARS.test(a)))
        return needs(`the builtin ${name} may evaluate a word with $ or a backquote`);
    }
    return { kind: 'simple', commands: reader.commands };
  } catch (e) {
    if (e instanceof NotSimple) return needs(e.message);
    return needs('the command line cannot be parsed');
  } finally {
    tree.delete();
  }
}

class TreeReader {
  readonly commands: SimpleCommand[] = [];
  /** [start, end) ranges of the line accounted for by whitelisted nodes. */
  private readonly covered: Array<[number, number]> = [];

  constructor(
    private readonly src: string,
    private readonly overBudget: () => boolean,
  ) {}

  program(node: TsNode): void {
    for (const c of node.children) {
      if (!c) continue;
      if (!c.isNamed) {
        this.operator(c);
        continue;
      }
      if (c.type === 'comment') {
        this.cover(c);
        continue;
      }
      this.statement(c);
    }
  }

  private statement(node: TsNode): void {
    switch (node.type) {
      case 'command':
        this.commands.push(this.command(node, []));
        return;
      case 'redirected_statement': {
        const body = node.childForFieldName('body');
        const redirs: Array<Redirection & { extra: string[] }> = [];
        for (const c of node.children) {
          if (!c) continue;
          if (c.id === body?.id) continue;
          if (c.type === 'file_redirect') redirs.push(this.redirect(c));
          else throw new NotSimple(notAllowed(c));
        }
        if (!body || body.type !== 'command') throw new NotSimple('a redirection of a compound command');
        const cmd = this.command(body, []);
        for (const r of redirs) {
          cmd.argv.push(...r.extra);
          cmd.redirections.push({ op: r.op, fd: r.fd, target: r.target });
        }
        this.commands.push(cmd);
        return;
      }
      case 'list':
      case 'pipeline':
        for (const c of node.children) {
          if (!c) continue;
          if (!c.isNamed) this.operator(c);
          else if (c.type === 'comment') this.cover(c);
          else this.statement(c);
        }
        return;
      default:
        throw new NotSimple(notAllowed(node));
    }
  }

  private operator(node: TsNode): void {
    if (!OPERATORS.has(node.type)) throw new NotSimple(`the operator ${JSON.stringify(node.type)} needs a human`);
    this.cover(node);
  }

  private command(node: TsNode, redirections: Redirection[]): SimpleCommand {
    const cmd: SimpleCommand = { argv: [], assignments: [], redirections };
    let lastEnd = -1;
    let touching = -1;
    for (const c of node.children) {
      if (!c) continue;
      // a node glued to an assignment or a redirection belongs to it in the shell's reading
      if (c.startIndex === touching && lastEnd === -1)
        throw new NotSimple('words joined to an assignment or a redirection');
      switch (c.type) {
        case 'variable_assignment':
          if (cmd.argv.length > 0) throw new NotSimple('an assignment after the command name');
          cmd.assignments.push(this.assignment(c));
          break;
        case 'command_name': {
          const inner = c.namedChildren.filter((x) => x !== null);
          if (inner.length !== 1 || c.children.length !== 1) throw new NotSimple(notAllowed(c));
          const name = this.word(inner[0]);
          if (RESERVED.has(name)) throw new NotSimple(`the shell word ${name} needs a human`);
          cmd.argv.push(name);
          break;
        }
        case 'file_redirect': {
          const r = this.redirect(c);
          if (r.extra.length > 0 && cmd.argv.length === 0) throw new NotSimple('a redirection before the command name');
          cmd.argv.push(...r.extra);
          cmd.redirections.push({ op: r.op, fd: r.fd, target: r.target });
          break;
        }
        default: {
          if (cmd.argv.length === 0) throw new NotSimple(notAllowed(c));
          const w = this.word(c);
          // nodes with nothing between them are one word to the shell
          if (c.startIndex === lastEnd) {
            cmd.argv[cmd.argv.length - 1] += w;
            if (cmd.argv.length === 1 && RESERVED.has(cmd.argv[0]))
              throw new NotSimple(`the shell word ${cmd.argv[0]} needs a human`);
          } else cmd.argv.push(w);
        }
      }
      lastEnd =
        c.type === 'command_name' || c.type === 'word' || !['file_redirect', 'variable_assignment'].includes(c.type)
          ? c.endIndex
          : -1;
      touching = c.endIndex;
    }
    if (cmd.argv.length === 0) throw new NotSimple('an assignment without a command changes the shell');
    return cmd;
  }

  private assignment(node: TsNode): string {
    const name = node.childForFieldName('name');
    const kids = node.children.filter((x) => x !== null);
    if (!name || name.type !== 'variable_name' || kids[1]?.type !== '=') throw new NotSimple(notAllowed(node));
    this.cover(name);
    this.cover(kids[1]);
    if (name.endIndex !== kids[1].startIndex) throw new NotSimple(notAllowed(node));
    if (kids.length === 2) return `${name.text}=`;
    if (kids.length !== 3 || kids[2].startIndex !== kids[1].endIndex) throw new NotSimple(notAllowed(node));
    return `${name.text}=${this.word(kids[2])}`;
  }

  /** A redirection, and the words after its target that tree-sitter files under it (`>f a` → argument a). */
  private redirect(node: TsNode): Redirection & { extra: string[] } {
    const kids = node.children.filter((x) => x !== null);
    // What the shells take as the descriptor is the word glued to the operator, whichever node
    // tree-sitter files it under (it reads `0<f` as the argument 0 and `12<f` as descriptor 12).
    const glued = gluedWord(this.src, node.startIndex);
    if (glued !== '' && DESCRIPTOR_LIKE.test(glued))
      throw new NotSimple(`the word ${clip(glued)} joined to a redirection is a descriptor to a shell`);
    let i = 0;
    let fd: string | null = null;
    if (kids[i]?.type === 'file_descriptor') {
      fd = kids[i].text;
      if (kids[i + 1]?.startIndex !== kids[i].endIndex) throw new NotSimple(notAllowed(node));
      if (!FD.test(fd)) throw new NotSimple(`the descriptor ${clip(fd)} is read differently by dash and bash`);
      this.cover(kids[i]);
      i++;
    }
    const op = kids[i];
    if (!op || op.isNamed || !REDIRECT_OPS.has(op.type))
      throw new NotSimple(`the redirection ${JSON.stringify(op?.type ?? node.text)} needs a human`);
    this.cover(op);
    const dest = kids[i + 1];
    if (!dest) throw new NotSimple(notAllowed(node));
    const target = this.word(dest);
    if (/^\/dev\/(tcp|udp)\//.test(target))
      throw new NotSimple(`the redirection to ${target} opens a connection in bash`);
    if ((op.type === '>&' || op.type === '<&') && !(FD.test(target) && dest.type === 'number'))
      throw new NotSimple(`the redirection ${op.type}${target} needs a human`);
    const extra: string[] = [];
    let end = dest.endIndex;
    for (const k of kids.slice(i + 2)) {
      if (k.startIndex === end) throw new NotSimple('words joined to a redirection');
      extra.push(this.word(k));
      end = k.endIndex;
    }
    return { op: op.type, fd, target, extra };
  }

  /** The literal value of a word-like node; anything that expands needs a human. */
  private word(node: TsNode): string {
    switch (node.type) {
      case 'word':
      case 'number': {
        const t = node.text;
        if (!PLAIN_WORD.test(t)) throw new NotSimple(`the word ${clip(t)} may expand`);
        this.cover(node);
        return t.replace(/\\(.)/g, '$1');
      }
      case 'raw_string': {
        const t = node.text;
        if (t.length < 2 || t[0] !== "'" || t[t.length - 1] !== "'" || t.slice(1, -1).includes("'"))
          throw new NotSimple(notAllowed(node));
        this.cover(node);
        return t.slice(1, -1);
      }
      case 'string': {
        // the children may skip blank content, so the text between the quotes is read here
        const t = node.text;
        if (t.length < 2 || t[0] !== '"' || t[t.length - 1] !== '"') throw new NotSimple(notAllowed(node));
        for (const k of node.namedChildren)
          if (k && k.type !== 'string_content') throw new NotSimple(`${notAllowed(k)} inside double quotes`);
        const body = t.slice(1, -1);
        if (/(^|[^\\])(\\\\)*[$`"]/.test(body)) throw new NotSimple('an expansion inside double quotes');
        this.cover(node);
        return body.replace(/\\([$`"\\\n])/g, (_m, ch: string) => (ch === '\n' ? '' : ch));
      }
      case 'concatenation': {
        let out = '';
        let at = node.startIndex;
        for (const k of node.children) {
          if (!k) continue;
          if (k.startIndex !== at) throw new NotSimple(notAllowed(node));
          out += this.word(k);
          at = k.endIndex;
        }
        if (at !== node.endIndex) throw new NotSimple(notAllowed(node));
        return out;
      }
      default:
        throw new NotSimple(notAllowed(node));
    }
  }

  private cover(node: TsNode): void {
    this.covered.push([node.startIndex, node.endIndex]);
    if (this.covered.length % CLOCK_EVERY === 0 && this.overBudget())
      throw new NotSimple(`reading the command line took longer than ${PARSE_BUDGET_MS} ms`);
  }

  /** Every character is in a whitelisted node or in plain blanks (space, tab, newline, `\` newline). */
  checkCoverage(): void {
    const spans = this.covered.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let at = 0;
    for (const [s, e] of spans) {
      if (s < at) {
        if (e <= at) continue; // a span inside one already covered (a string's quotes and content)
        throw new NotSimple('overlapping syntax');
      }
      if (!BLANKS.test(this.src.slice(at, s))) throw new NotSimple(gapReason(this.src.slice(at, s)));
      at = e;
    }
    if (!BLANKS.test(this.src.slice(at))) throw new NotSimple(gapReason(this.src.slice(at)));
  }
}

/**
 * The source text glued in front of `at` back to the last blank or metacharacter: the word a shell
 * reads together with an operator starting at `at`. Quotes are kept, so a quoted word is never
 * descriptor-like; an escaped blank ends the run early, which only makes the answer more careful.
 */
function gluedWord(src: string, at: number): string {
  let i = at;
  while (i > 0 && !WORD_END.has(src[i - 1])) i--;
  return src.slice(i, at);
}

/** Runs of characters other than space, tab and newline: an upper bound of the words tree-sitter sees. */
function countWords(line: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    const blank = c === 32 || c === 9 || c === 10;
    if (!blank && !inWord) n++;
    inWord = !blank;
  }
  return n;
}

function clip(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

function notAllowed(node: TsNode): string {
  const what: Record<string, string> = {
    command_substitution: 'a command substitution',
    process_substitution: 'a process substitution',
    expansion: 'a parameter expansion',
    simple_expansion: 'a parameter expansion',
    arithmetic_expansion: 'an arithmetic expansion',
    compound_statement: 'a command group',
    subshell: 'a subshell',
    if_statement: 'an if statement',
    for_statement: 'a for loop',
    c_style_for_statement: 'a for loop',
    while_statement: 'a while loop',
    case_statement: 'a case statement',
    function_definition: 'a function definition',
    heredoc_redirect: 'a here-document',
    herestring_redirect: 'a here-string',
    test_command: 'a test command',
    negated_command: 'a negated command',
    declaration_command: 'a declaration',
    unset_command: 'an unset command',
    ansi_c_string: "a $'…' string",
    translated_string: 'a $"…" string',
    brace_expression: 'a brace expansion',
    variable_assignments: 'assignments without a command',
  };
  return `${what[node.type] ?? `the shell construct ${node.type}`} needs a human`;
}

function gapReason(gap: string): string {
  const odd = [...gap].find((c) => !/[ \t\n\\]/.test(c));
  if (odd === undefined) return 'unexpected characters between words';
  const cp = odd.codePointAt(0) as number;
  return cp < 0x20 || cp > 0x7e
    ? `the character U+${cp.toString(16).toUpperCase().padStart(4, '0')} between words needs a human`
    : `the character ${JSON.stringify(odd)} needs a human`;
}

// ---------------------------------------------------------------- token scan

const SCAN_SEPARATORS = /[;&|()<>`\n]+/;
/** Blanks to some shell, plus brace-expansion punctuation (`{rm,-rf,x}` runs rm -rf x in bash). */
const SCAN_BLANKS = /[\s{},\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]+/;

/**
 * A line that cannot be read as simple commands, cut into candidate commands by every character
 * that could separate commands to some shell, quotes and backslashes dropped. An over-approximation
 * for deny rules: whatever a shell could run from the line appears as a token sequence here.
 */
export function scanSegments(line: string): string[][] {
  const out: string[][] = [];
  for (const seg of line.replace(/\$\(|\$\{|\$\[|\$'|\$"/g, ' ').split(SCAN_SEPARATORS)) {
    const words = seg
      .replace(/["'\\]/g, '')
      .split(SCAN_BLANKS)
      .filter((w) => w.length > 0);
    if (words.length > 0) out.push(words);
  }
  return out;
}
