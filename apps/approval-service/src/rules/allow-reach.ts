import { patternWords, unallowableReason } from './command-match';
import { programSpec } from './programs';
import { writesOrRuns } from './read-only-catalogue';

/**
 * Whether an allow rule's command pattern can ever allow a command: an allow rule matches the
 * command as written (a prefix of its words; `*` any one word, or as the last word any rest) and
 * yields Require for a command that runs others or code, or that the read-only catalogue says
 * writes or reads configuration that runs programs. A pattern whose every command is such (`git *`:
 * every git invocation reads the repository's hooks; `xargs *`, `env *`, `tee *`, `python3 app.py`)
 * never allows anything; the console shows why (`never_allows`).
 *
 * Decided by asking the gate: the pattern's commands are probed with words in place of its stars
 * and after its last word (ordinary words, the program's information options, common options);
 * one probe the gate would allow shows the rule can allow. The property test
 * (allow-reach.spec.ts) checks the other direction on generated commands: a pattern said never to
 * allow matches no command the gate would allow.
 */

/** Words put for a `*` and after the pattern (information options of the program come too). */
const FILLERS = ['x', 'README.md', '.', '-l', '-n', 'status'] as const;
const TAILS: ReadonlyArray<readonly string[]> = [[], ['x'], ['README.md'], ['.'], ['-l']];
/** Stars probed with every filler; any further ones take the first filler (bounded work). */
const MAX_FREE_STARS = 3;
/** Patterns judged, remembered (the rules list asks for each rule at every read). */
const MEMO_MAX = 2_000;
const memo = new Map<string, string | null>();

/** Why no command this allow pattern matches can be allowed, or null when one can (or it cannot be told). */
export function neverAllows(pattern: string): string | null {
  if (memo.has(pattern)) return memo.get(pattern) ?? null;
  const answer = judge(pattern);
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(pattern, answer);
  return answer;
}

function judge(pattern: string): string | null {
  const words = patternWords(pattern);
  if (typeof words === 'string' || words.length === 0) return null;
  // a program named by a glob could be any program
  if (words[0].includes('*')) return null;
  const runner = programSpec(words[0])?.runner;
  const info = runner?.kind === 'runs_code' ? (runner.info ?? ['--version', '--help']) : [];
  const fillers = [...FILLERS, ...info];
  const trailingStar = words.length > 1 && words[words.length - 1] === '*';
  const body = trailingStar ? words.slice(0, -1) : words;
  const tails = [...TAILS, ...fillers.filter((f) => f.startsWith('-')).map((f) => [f])];
  let firstReason: string | null = null;
  let free = 0;
  const choices = body.map((w, i) => {
    if (i === 0 || !w.includes('*')) return [w];
    if (free++ >= MAX_FREE_STARS) return [w === '*' ? fillers[0] : w.replaceAll('*', '')];
    return w === '*' ? fillers : [w.replaceAll('*', ''), w.replaceAll('*', 'x')];
  });
  for (const argv of product(choices)) {
    for (const tail of tails) {
      const probe = [...argv, ...tail];
      const reason = refusal(probe);
      if (reason === null) return null;
      firstReason ??= reason;
    }
  }
  return firstReason;
}

/** Why an allow rule matching exactly this command yields Require, or null when it allows. */
export function refusal(argv: readonly string[]): string | null {
  return unallowableReason({ argv: [...argv], assignments: [], redirections: [] }) ?? writesOrRuns(argv);
}

/** Every combination, one word from each list (the lists are bounded above). */
function* product(lists: ReadonlyArray<readonly string[]>): Generator<string[]> {
  if (lists.length === 0) {
    yield [];
    return;
  }
  const [first, ...rest] = lists;
  for (const w of first) for (const r of product(rest)) yield [w, ...r];
}
