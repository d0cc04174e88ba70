import { baseName } from './command-match';

/**
 * Programs an operator may allow as "read-only" that can nonetheless write, delete or execute,
 * with the invocations that do. An allow rule that matches such an invocation yields Require.
 * The table in docs/approval.md is generated from this list (`catalogueMarkdown`), and a test
 * checks that the two agree.
 */
export interface CatalogueEntry {
  programs: string[];
  /** The invocations that write, delete or execute, as shown to an operator. */
  when: string;
  /** What they do. */
  effect: string;
  /** True when the argv (program first) is such an invocation. */
  test: (args: readonly string[]) => boolean;
}

/** `--name`, `--name=…`; `-x` also inside a short-flag cluster (`-ni`, `-i.bak`). */
function hasOption(args: readonly string[], ...opts: string[]): boolean {
  return args.some((a) =>
    opts.some((o) => {
      if (o.startsWith('--')) return a === o || a.startsWith(`${o}=`);
      if (o.length === 2) return /^-[A-Za-z0-9]/.test(a) && !a.startsWith('--') && a.slice(1).includes(o[1]);
      return a === o;
    }),
  );
}
/** Exact words, or words starting with a prefix (`-fprint` covers `-fprintf`). */
function hasWord(args: readonly string[], ...words: string[]): boolean {
  return args.some((a) => words.some((w) => (w.endsWith('*') ? a.startsWith(w.slice(0, -1)) : a === w)));
}
function positional(args: readonly string[]): string[] {
  return args.filter((a) => !a.startsWith('-'));
}

const SAFE_SED_SCRIPT = /^\s*(\d+|\$)(\s*,\s*(\d+|\$))?\s*p\s*$/;

export const READ_ONLY_CATALOGUE: readonly CatalogueEntry[] = [
  {
    programs: ['find'],
    when: '`-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint`, `-fprint0`, `-fprintf`, `-fls`',
    effect: 'runs commands, deletes files, writes files',
    test: (a) => hasWord(a, '-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint*', '-fls'),
  },
  {
    programs: ['git'],
    when: 'every invocation',
    effect:
      'reads the workspace repository’s configuration and hooks, which can run programs (`core.fsmonitor` on `status`, `core.pager`, `diff.external`, textconv, hooks); `-c`, `--config-env`, `--exec-path`, `--output`, `config` write or run directly',
    test: () => true,
  },
  {
    programs: ['sed'],
    when: '`-i`, `--in-place`, or any script other than `N[,M]p`',
    effect: 'edits files in place; scripts can write (`w`, `W`, `s///w`) and run commands (`e`, `s///e`)',
    test: (a) => {
      if (hasOption(a, '-i', '--in-place', '-f', '--file')) return true;
      const scripts: string[] = [];
      for (let i = 1; i < a.length; i++) {
        if (a[i] === '-e' || a[i] === '--expression') scripts.push(a[++i] ?? '');
        else if (a[i].startsWith('--expression=')) scripts.push(a[i].slice('--expression='.length));
      }
      if (scripts.length === 0) {
        const first = positional(a.slice(1))[0];
        if (first !== undefined) scripts.push(first);
      }
      return scripts.some((s) => !SAFE_SED_SCRIPT.test(s));
    },
  },
  {
    programs: ['sort'],
    when: '`-o`, `--output`, `--compress-program`',
    effect: 'writes a file; runs a program',
    test: (a) => hasOption(a, '-o', '--output', '--compress-program'),
  },
  {
    programs: ['tee'],
    when: 'every invocation',
    effect: 'writes its file arguments',
    test: () => true,
  },
  {
    programs: ['awk', 'gawk', 'mawk', 'nawk'],
    when: 'a program with `system`, `|`, `>`, `getline`, or one read from a file (`-f`), `-i`, `-l`, `-E`',
    effect: 'runs commands and writes files',
    test: (a) =>
      hasWord(a, '-f', '--file', '-i', '--include', '-l', '--load', '-E', '--exec') ||
      a.slice(1).some((w) => /system|getline|[|>]|close|fflush/.test(w)),
  },
  {
    programs: ['xargs'],
    when: 'every invocation',
    effect: 'runs its arguments as a command',
    test: () => true,
  },
  {
    programs: ['less', 'more', 'most', 'man'],
    when: 'every invocation',
    effect: 'run input preprocessors and editors (`LESSOPEN`, `v`, `!`)',
    test: () => true,
  },
  {
    programs: ['tar'],
    when: 'anything but listing (`t`, `--list`), and `--to-command`, `-I`, `--use-compress-program`, `--checkpoint-action`, `-F`, `--info-script`',
    effect: 'extracts or writes archives; runs programs',
    test: (a) => {
      if (
        hasOption(
          a,
          '--to-command',
          '--use-compress-program',
          '--checkpoint-action',
          '--info-script',
          '--new-volume-script',
        )
      )
        return true;
      if (hasWord(a, '-I', '-F')) return true;
      const first = a[1] ?? '';
      const lists = hasOption(a, '--list') || /^-?[A-Za-z]*t/.test(first);
      return !lists;
    },
  },
  {
    programs: ['rg'],
    when: '`--pre`, `--hostname-bin`, `-z`, `--search-zip`',
    effect: 'runs a preprocessor, a program or decompressors on every file',
    test: (a) => hasOption(a, '--pre', '--hostname-bin', '--search-zip') || hasWord(a, '-z'),
  },
  {
    programs: ['uniq'],
    when: 'a second file argument',
    effect: 'writes the output file',
    test: (a) => positional(a.slice(1)).length >= 2,
  },
  {
    programs: ['tree'],
    when: '`-o`',
    effect: 'writes a file',
    test: (a) => hasWord(a, '-o'),
  },
  {
    programs: ['curl'],
    when: '`-o`, `-O`, `--output`, `--remote-name`, `-D`, `--dump-header`, `-c`, `--cookie-jar`, `--trace`, `-K`, `--config`',
    effect: 'writes files; reads options (and output paths) from a file',
    test: (a) =>
      hasOption(
        a,
        '-o',
        '-O',
        '--output',
        '--remote-name',
        '-D',
        '--dump-header',
        '-c',
        '--cookie-jar',
        '--trace',
        '--trace-ascii',
        '-K',
        '--config',
        '--libcurl',
      ),
  },
  {
    programs: ['wget'],
    when: 'every invocation',
    effect: 'writes the downloaded file',
    test: () => true,
  },
  {
    programs: ['date'],
    when: '`-s`, `--set`',
    effect: 'sets the clock',
    test: (a) => hasOption(a, '-s', '--set'),
  },
  {
    programs: ['dd'],
    when: '`of=`',
    effect: 'writes a file',
    test: (a) => hasWord(a, 'of=*'),
  },
  {
    programs: ['unzip'],
    when: 'anything but `-l`, `-v`, `-t`, `-Z`',
    effect: 'extracts (writes) files',
    test: (a) => !hasWord(a, '-l', '-v', '-t', '-Z'),
  },
  {
    programs: ['yq'],
    when: '`-i`, `--inplace`',
    effect: 'edits files in place',
    test: (a) => hasOption(a, '-i', '--inplace'),
  },
];

const BY_PROGRAM = new Map<string, CatalogueEntry>();
for (const e of READ_ONLY_CATALOGUE) for (const p of e.programs) BY_PROGRAM.set(p, e);

/** Why this invocation is not read-only (an allow rule then yields Require), or null. */
export function writesOrRuns(argv: readonly string[]): string | null {
  const program = baseName(argv[0] ?? '');
  const entry = BY_PROGRAM.get(program);
  if (!entry || !entry.test(argv)) return null;
  return `${program} ${entry.when === 'every invocation' ? '' : `with ${entry.when} `}${entry.effect}`.replace(
    /`/g,
    '',
  );
}

/** The docs table (docs/approval.md, between the catalogue markers). */
export function catalogueMarkdown(): string {
  const rows = READ_ONLY_CATALOGUE.map(
    (e) => `| ${e.programs.map((p) => `\`${p}\``).join(', ')} | ${e.when} | ${e.effect} |`,
  );
  return ['| program | invocations that are not read-only | what they do |', '| --- | --- | --- |', ...rows].join('\n');
}
