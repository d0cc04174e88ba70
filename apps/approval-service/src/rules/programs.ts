// Size: one table of what the gate knows of programs (one row per program: options, subcommands,
// risks, wrappers); its rows change one at a time, and splitting it would split the table, not its
// reasons to change.
/**
 * What the gate knows of programs, in one table: which options take a value, where the
 * subcommand is, which invocations write or run code (the read-only catalogue), and which programs
 * run other commands (wrappers, shells) or run code (interpreters). Everything else is derived
 * from it: the read-only catalogue and its docs table (read-only-catalogue.ts), deny-rule matching
 * and unwrapping (command-match.ts), the narrow session approval's scope and its check
 * (session-bypass.ts). Lookups are by Map; no regular expression is built per call.
 */

/** How an invocation is not read-only, from least to most: the catalogue's three kinds. */
export type Risk =
  /** Reads configuration of the workspace that can run programs (git hooks, `core.fsmonitor`). */
  | 'config'
  /** Writes or deletes files. */
  | 'writes'
  /** Runs code the gate cannot read (inline, from a file, a program named by an option). */
  | 'runs';

export interface CatalogueRow {
  /** The invocations, as shown to an operator (markdown). */
  when: string;
  /** What they do. */
  effect: string;
  risk: Risk;
}

/** A parsed option: its normalised name (`-n`, `--expression` folded to `-e` where known) and value. */
export interface ParsedOption {
  name: string;
  value: string | null;
}

/** An argv read with its program's option knowledge. */
export interface Invocation {
  argv: readonly string[];
  /** Base name of argv[0]. */
  program: string;
  spec: ProgramSpec | undefined;
  options: ParsedOption[];
  /** The words that are not options or option values, in order. */
  positional: string[];
  /**
   * Indices into `positional` of words that follow an option whose arity the table does not know
   * (an unknown program's `-x word`): the word may be that option's value.
   */
  ambiguous: Set<number>;
}

export interface RunsCommand {
  kind: 'runs_command';
  /** Positional words the wrapper itself consumes before the command (`timeout DUR`). */
  leading?: number;
  /** `NAME=value` words before the command are the wrapper's (`env X=1 cmd`). */
  assignments?: boolean;
  /** Its positional words are not a command (`script FILE`): it runs only what its code options give. */
  noPositionalCommand?: boolean;
  /** Options whose value is shell code (`script -c CODE`, `su -c CODE`), scanned like an unreadable line. */
  codeShort?: string;
  codeLong?: readonly string[];
  /** All its arguments are shell code (`sh -c`, `eval`). */
  shell?: boolean;
  /**
   * An option can stand for the leading words (`runcon -t T cmd` as well as `runcon CTX cmd`):
   * the command is read both after the leading words and without consuming them.
   */
  leadingOptional?: boolean;
  /**
   * It reads the commands it runs from standard input (or a script file) when not given them on
   * the line, which the gate cannot see (`printf 'rm x' | sh`): `unless_code_option` — unless a
   * code option (`codeShort`/`codeLong`, e.g. `sh -c`) is given; `unless_command` — unless a
   * command or code follows its options and `leading` words (`sg grp`, `newgrp`, `script`). Such an
   * invocation runs code (never covered by a bypass; a human under a deny rule).
   */
  readsStdin?: 'unless_code_option' | 'unless_command';
}
export interface RunsCode {
  kind: 'runs_code';
  /** The only arguments with which it runs no code (`python3 --version`); default `--version`, `--help`. */
  info?: readonly string[];
}

export interface ProgramSpec {
  names: readonly string[];
  /** Short option letters that take a value (`-C dir`, `-Cdir`). */
  valuedShort?: string;
  /** Short option letters whose value, if any, is attached (`-i.bak`): never the next word. */
  attachedShort?: string;
  /** Short option letters with an optional separate value (`make -j 4`): the next word is ambiguous. */
  optionalShort?: string;
  /** Long options (no dashes) that take a value (`--file x`, `--file=x`). */
  valuedLong?: readonly string[];
  /** Options are single-dash words (`find . -name x`); `valuedLong` then names the valued ones. */
  singleDashWords?: boolean;
  /** tar: the first word may be a dash-less cluster (`tar tf a.tar`). */
  bundledFirst?: boolean;
  /** Long options folded onto a short one (`--recursive` ≡ `-r`). */
  longFlags?: Readonly<Record<string, string>>;
  /** Short letters folded onto another (`rm -R` ≡ `rm -r`). */
  shortAliases?: Readonly<Record<string, string>>;
  /** It runs other commands (wrappers, shells) or code (interpreters). */
  runner?: RunsCommand | RunsCode;
  /** Options whose following words up to `;` or `+` are a command it runs (`find -exec rm x ;`): a runner too. */
  execOptions?: readonly string[];
  /** The read-only catalogue: its rows, and which row (if any) an invocation falls under. */
  catalogue?: { rows: readonly CatalogueRow[]; classify: (inv: Invocation) => number | null };
}

// ---------------------------------------------------------------- helpers for classify

function has(inv: Invocation, ...names: string[]): boolean {
  return inv.options.some((o) => names.includes(o.name));
}
function values(inv: Invocation, ...names: string[]): string[] {
  return inv.options.filter((o) => names.includes(o.name)).map((o) => o.value ?? '');
}
const always = () => 0;

const SAFE_SED_SCRIPT = /^\s*(\d+|\$)(\s*,\s*(\d+|\$))?\s*p\s*$/;
const AWK_RUNS = /system|getline|[|>]|close|fflush|@/;
const FIND_EXEC = ['-exec', '-execdir', '-ok', '-okdir'];

// ---------------------------------------------------------------- the table

const COMMON_INFO = ['--version', '--help'];

const WRAPPERS: ProgramSpec[] = [
  { names: ['command', 'builtin'], runner: { kind: 'runs_command' } },
  { names: ['exec'], valuedShort: 'a', runner: { kind: 'runs_command' } },
  {
    names: ['env'],
    valuedShort: 'uCS',
    valuedLong: ['unset', 'chdir', 'split-string', 'block-signal', 'default-signal', 'ignore-signal'],
    runner: { kind: 'runs_command', assignments: true },
  },
  { names: ['nice'], valuedShort: 'n', valuedLong: ['adjustment'], runner: { kind: 'runs_command' } },
  {
    names: ['nohup', 'setsid', 'unbuffer', 'caffeinate', 'firejail', 'busybox'],
    runner: { kind: 'runs_command' },
  },
  {
    names: ['timeout'],
    valuedShort: 'sk',
    valuedLong: ['signal', 'kill-after'],
    runner: { kind: 'runs_command', leading: 1 },
  },
  { names: ['stdbuf'], valuedShort: 'ioe', valuedLong: ['input', 'output', 'error'], runner: { kind: 'runs_command' } },
  { names: ['time'], valuedShort: 'fo', valuedLong: ['format', 'output'], runner: { kind: 'runs_command' } },
  {
    names: ['xargs'],
    valuedShort: 'ILnPsdEa',
    valuedLong: [
      'max-args',
      'max-procs',
      'delimiter',
      'arg-file',
      'max-lines',
      'max-chars',
      'replace',
      'eof',
      'process-slot-var',
    ],
    runner: { kind: 'runs_command' },
    catalogue: {
      rows: [{ when: 'every invocation', effect: 'runs its arguments as a command', risk: 'runs' }],
      classify: always,
    },
  },
  {
    names: ['sudo'],
    valuedShort: 'ugCDhprtUT',
    valuedLong: [
      'user',
      'group',
      'chdir',
      'host',
      'prompt',
      'role',
      'type',
      'other-user',
      'command-timeout',
      'close-from',
      'chroot',
    ],
    runner: { kind: 'runs_command', assignments: true, readsStdin: 'unless_command' },
  },
  { names: ['doas'], valuedShort: 'uC', runner: { kind: 'runs_command', readsStdin: 'unless_command' } },
  {
    names: ['ionice'],
    valuedShort: 'cnp',
    valuedLong: ['class', 'classdata', 'pid'],
    runner: { kind: 'runs_command' },
  },
  { names: ['chrt', 'taskset'], runner: { kind: 'runs_command', leading: 1 } },
  { names: ['chroot'], valuedLong: ['userspec', 'groups'], runner: { kind: 'runs_command', leading: 1 } },
  {
    names: ['flock'],
    valuedShort: 'wEc',
    valuedLong: ['timeout', 'conflict-exit-code', 'command'],
    runner: { kind: 'runs_command', leading: 1, codeShort: 'c', codeLong: ['command'] },
  },
  { names: ['watch'], valuedShort: 'nd', valuedLong: ['interval'], runner: { kind: 'runs_command', shell: true } },
  { names: ['strace', 'ltrace'], valuedShort: 'eopsuUSbPIaAE', runner: { kind: 'runs_command' } },
  { names: ['parallel'], valuedShort: 'jS', valuedLong: ['jobs'], runner: { kind: 'runs_command', shell: true } },
  {
    names: ['su'],
    valuedShort: 'csgGw',
    valuedLong: ['command', 'shell', 'group', 'supp-group', 'whitelist-environment', 'session-command'],
    runner: {
      kind: 'runs_command',
      shell: true,
      codeShort: 'c',
      codeLong: ['command', 'session-command'],
      readsStdin: 'unless_code_option',
    },
  },
  {
    names: ['runuser'],
    valuedShort: 'ugGcsw',
    valuedLong: ['user', 'group', 'supp-group', 'command', 'shell', 'whitelist-environment', 'session-command'],
    runner: {
      kind: 'runs_command',
      shell: true,
      codeShort: 'c',
      codeLong: ['command', 'session-command'],
      readsStdin: 'unless_code_option',
    },
  },
  {
    names: ['unshare'],
    valuedShort: 'SGRw',
    valuedLong: [
      'setuid',
      'setgid',
      'root',
      'wd',
      'propagation',
      'setgroups',
      'map-user',
      'map-group',
      'map-users',
      'map-groups',
      'kill-child',
      'load-interp',
    ],
    runner: { kind: 'runs_command' },
  },
  {
    names: ['setpriv'],
    valuedLong: [
      'reuid',
      'regid',
      'ruid',
      'euid',
      'rgid',
      'egid',
      'groups',
      'inh-caps',
      'ambient-caps',
      'bounding-set',
      'securebits',
      'pdeathsig',
      'selinux-label',
      'apparmor-profile',
      'landlock-access',
      'landlock-rule',
      'seccomp-filter',
    ],
    runner: { kind: 'runs_command' },
  },
  { names: ['prlimit'], valuedShort: 'po', valuedLong: ['pid', 'output'], runner: { kind: 'runs_command' } },
  {
    names: ['nsenter'],
    valuedShort: 'tSGwR',
    valuedLong: ['target', 'setuid', 'setgid', 'wd', 'root', 'env'],
    runner: { kind: 'runs_command' },
  },
  {
    names: ['fakeroot', 'fakeroot-sysv', 'fakeroot-tcp'],
    valuedShort: 'lsib',
    valuedLong: ['lib', 'faked'],
    runner: { kind: 'runs_command' },
  },
  { names: ['valgrind', 'valgrind.bin'], valuedShort: '', runner: { kind: 'runs_command' } },
  {
    names: ['script'],
    valuedShort: 'cEIOBTmo',
    valuedLong: ['command', 'echo', 'log-in', 'log-out', 'log-io', 'log-timing', 'logging-format', 'output-limit'],
    runner: {
      kind: 'runs_command',
      noPositionalCommand: true,
      codeShort: 'c',
      codeLong: ['command'],
      readsStdin: 'unless_code_option',
    },
  },
  // Found by test/e2e/wrapper-sweep.e2e-spec.ts (every executable of the sandbox image run as
  // `X rm marker`, `X -- rm marker`, `X -c 'rm marker'`, …); options from each program's `--help`
  // and manual (util-linux 2.38, coreutils 9.1, Debian 12). Options whose value is optional must
  // be glued (`prlimit --nofile=10`, `nsenter -m/proc/1/ns/mnt`), so they are flags here.
  { names: ['choom'], valuedShort: 'np', valuedLong: ['adjust', 'pid'], runner: { kind: 'runs_command' } },
  // `setarch ARCH [options] [program]`; its links take the arch from their name.
  { names: ['setarch'], runner: { kind: 'runs_command', leading: 1 } },
  { names: ['linux32', 'linux64', 'x86_64', 'i386'], runner: { kind: 'runs_command' } },
  {
    names: ['runcon'],
    valuedShort: 'urtl',
    valuedLong: ['user', 'role', 'type', 'range'],
    runner: { kind: 'runs_command', leading: 1, leadingOptional: true },
  },
  // `sg GROUP [-c] CMD`: the command is given to `sh -c`; `sg GROUP` alone runs a shell on stdin.
  { names: ['sg'], runner: { kind: 'runs_command', leading: 1, shell: true, readsStdin: 'unless_command' } },
  // `newgrp [GROUP]` starts a shell that reads its commands from standard input.
  {
    names: ['newgrp'],
    runner: { kind: 'runs_command', leading: 1, noPositionalCommand: true, readsStdin: 'unless_command' },
  },
  // `tmux [-c CODE] [command [args]]`: its commands run shell code; alone it starts a shell.
  {
    names: ['tmux'],
    valuedShort: 'cfLST',
    runner: { kind: 'runs_command', shell: true, codeShort: 'c', readsStdin: 'unless_command' },
  },
  // `fstab-decode COMMAND [ARGUMENT]...`, LLVM's `not [--crash] COMMAND` (installed as `not-14`)
  { names: ['fstab-decode', 'not'], runner: { kind: 'runs_command' } },
  // `logsave [-asv] LOGFILE COMMAND [ARGS]`
  { names: ['logsave'], runner: { kind: 'runs_command', leading: 1 } },
  { names: ['heaptrack'], valuedShort: 'op', valuedLong: ['output', 'pid'], runner: { kind: 'runs_command' } },
  {
    names: ['memusage'],
    valuedShort: 'npdbxy',
    valuedLong: ['progname', 'png', 'data', 'buffer', 'x-size', 'y-size'],
    runner: { kind: 'runs_command' },
  },
  { names: ['sotruss'], valuedShort: 'FTo', valuedLong: ['from', 'to', 'output'], runner: { kind: 'runs_command' } },
  {
    names: ['npx'],
    valuedShort: 'pc',
    valuedLong: ['package', 'call'],
    runner: { kind: 'runs_command', codeShort: 'c', codeLong: ['call'] },
  },
  // `luit [options] [--] [program [args]]`: single-dash word options, some with a value.
  {
    names: ['luit'],
    singleDashWords: true,
    valuedLong: ['encoding', 'ilog', 'olog', 'argv0', 'alias', 'gl', 'gr', 'g0', 'g1', 'g2', 'g3'].concat([
      'kgl',
      'kgr',
      'kg0',
      'kg1',
      'kg2',
      'kg3',
    ]),
    runner: { kind: 'runs_command' },
  },
  { names: ['ssh-agent'], valuedShort: 'aEOPt', runner: { kind: 'runs_command' } },
  { names: ['dbus-run-session'], valuedLong: ['config-file', 'dbus-daemon'], runner: { kind: 'runs_command' } },
  // `dpkg-architecture [options] -c COMMAND`
  {
    names: ['dpkg-architecture'],
    valuedShort: 'atATWBEqei',
    valuedLong: ['host-arch', 'host-type', 'target-arch', 'target-type', 'match-wildcard', 'match-bits'].concat([
      'match-endian',
      'query',
      'equal',
      'is',
    ]),
    runner: { kind: 'runs_command' },
  },
];

/**
 * Shells and `eval`: their arguments are shell code, scanned like an unreadable line. A shell
 * without `-c` runs a script file or reads its commands from standard input (`sh`, `bash -s`).
 */
const SHELL_NAMES = ['sh', 'bash', 'rbash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh'];
const SHELLS: ProgramSpec[] = [
  {
    names: SHELL_NAMES,
    valuedShort: 'O',
    valuedLong: ['init-file', 'rcfile'],
    runner: {
      kind: 'runs_command',
      shell: true,
      codeShort: 'c',
      codeLong: ['command'],
      readsStdin: 'unless_code_option',
    },
  },
  { names: ['eval'], runner: { kind: 'runs_command', shell: true } },
];

const INTERPRETERS: ProgramSpec[] = [
  {
    names: ['python', 'python2', 'python3', 'pypy', 'pypy3', 'pdb'],
    valuedShort: 'cmWXQ',
    runner: { kind: 'runs_code', info: ['--version', '-V', '--help', '-h'] },
  },
  {
    names: ['node', 'nodejs', 'deno', 'bun', 'ts-node', 'tsx'],
    valuedShort: 'erp',
    valuedLong: ['eval', 'print', 'require', 'import'],
    runner: { kind: 'runs_code', info: ['--version', '-v', '--help', '-h'] },
  },
  {
    names: ['perl'],
    valuedShort: 'eEIMm',
    runner: { kind: 'runs_code', info: ['--version', '-v', '-V', '--help', '-h'] },
  },
  { names: ['ruby', 'irb'], valuedShort: 'erIC', runner: { kind: 'runs_code', info: ['--version', '--help', '-h'] } },
  { names: ['php'], valuedShort: 'rBREFcdz', runner: { kind: 'runs_code', info: ['--version', '-v', '--help', '-h'] } },
  {
    names: [
      'lua',
      'luajit',
      'tclsh',
      'wish',
      'expect',
      'Rscript',
      'R',
      'julia',
      'guile',
      'racket',
      'scheme',
      'ocaml',
      'ghci',
      'runghc',
      'groovy',
      'jshell',
      'scala',
      'elixir',
      'erl',
      'escript',
      // `run_erl PIPE_DIR LOG_DIR "CMD"`: its third word is shell code
      'run_erl',
      'dc',
      'ed',
      'ex',
      'vi',
      'vim',
      'view',
      'vimdiff',
      'nvim',
      'emacs',
      'gdb',
      'm4',
    ],
    valuedShort: 'el',
    runner: { kind: 'runs_code', info: COMMON_INFO },
  },
];

const READERS: ProgramSpec[] = [
  {
    names: ['find'],
    singleDashWords: true,
    execOptions: FIND_EXEC,
    valuedLong: [
      'name',
      'iname',
      'path',
      'ipath',
      'regex',
      'iregex',
      'type',
      'xtype',
      'maxdepth',
      'mindepth',
      'newer',
      'anewer',
      'cnewer',
      'size',
      'user',
      'group',
      'perm',
      'mtime',
      'mmin',
      'atime',
      'amin',
      'ctime',
      'cmin',
      'links',
      'inum',
      'samefile',
      'used',
      'uid',
      'gid',
      'lname',
      'ilname',
      'wholename',
      'iwholename',
      'fstype',
      'context',
      'printf',
      'fprint',
      'fprint0',
      'fls',
      'regextype',
      'D',
      'newerXY',
      'files0-from',
    ],
    catalogue: {
      rows: [
        { when: '`-exec`, `-execdir`, `-ok`, `-okdir`', effect: 'runs commands', risk: 'runs' },
        {
          when: '`-delete`, `-fprint`, `-fprint0`, `-fprintf`, `-fls`',
          effect: 'deletes files, writes files',
          risk: 'writes',
        },
      ],
      classify: (inv) =>
        has(inv, ...FIND_EXEC) ? 0 : has(inv, '-delete', '-fprint', '-fprint0', '-fprintf', '-fls') ? 1 : null,
    },
  },
  {
    names: ['git'],
    valuedShort: 'Cc',
    valuedLong: [
      'git-dir',
      'work-tree',
      'namespace',
      'exec-path',
      'config-env',
      'super-prefix',
      'list-cmds',
      'attr-source',
    ],
    longFlags: { force: 'f' },
    catalogue: {
      rows: [
        {
          when: '`-c`, `-C`, `--config-env`, `--exec-path`, `--git-dir`, `--work-tree`, `--upload-pack`, `--receive-pack`, `--exec`, `-x`, `--extcmd`, `--ext-diff`, `--template`, and the subcommands `config`, `filter-branch`, `bisect`, `submodule`, `difftool`, `mergetool`, `daemon`, `instaweb`, `credential`, `hook`',
          effect: 'run programs named on the line or read configuration from elsewhere; `config` writes it',
          risk: 'runs',
        },
        { when: '`--output`', effect: 'writes a file', risk: 'writes' },
        {
          when: 'every other invocation',
          effect:
            'reads the workspace repository’s configuration and hooks, which can run programs (`core.fsmonitor` on `status`, `core.pager`, `diff.external`, textconv, hooks)',
          risk: 'config',
        },
      ],
      classify: (inv) => {
        if (
          has(
            inv,
            '-c',
            '-C',
            '--config-env',
            '--exec-path',
            '--git-dir',
            '--work-tree',
            '--upload-pack',
            '--receive-pack',
            '--exec',
            '-x',
            '--extcmd',
            '--ext-diff',
            '--template',
          ) ||
          GIT_RUNS_SUBCOMMANDS.has(inv.positional[0] ?? '')
        )
          return 0;
        if (has(inv, '--output')) return 1;
        return 2;
      },
    },
  },
  {
    names: ['sed'],
    valuedShort: 'efl',
    attachedShort: 'i',
    valuedLong: ['expression', 'file', 'line-length'],
    longFlags: { expression: 'e', file: 'f', 'in-place': 'i', quiet: 'n', silent: 'n', 'regexp-extended': 'E' },
    catalogue: {
      rows: [
        {
          when: '`-f`, `--file`, a script with `e` (`e`, `s///e` run commands)',
          effect: 'runs commands',
          risk: 'runs',
        },
        {
          when: '`-i`, `--in-place`, or any other script than `N[,M]p`',
          effect: 'edits files in place; scripts can write (`w`, `W`, `s///w`)',
          risk: 'writes',
        },
      ],
      classify: (inv) => {
        if (has(inv, '-f')) return 0;
        const scripts = values(inv, '-e');
        if (scripts.length === 0 && inv.positional.length > 0) scripts.push(inv.positional[0]);
        if (scripts.some((s) => s.includes('e'))) return 0;
        if (has(inv, '-i') || scripts.some((s) => !SAFE_SED_SCRIPT.test(s))) return 1;
        return null;
      },
    },
  },
  {
    names: ['sort'],
    valuedShort: 'ktTSo',
    valuedLong: [
      'key',
      'field-separator',
      'temporary-directory',
      'buffer-size',
      'output',
      'compress-program',
      'files0-from',
      'batch-size',
      'parallel',
      'random-source',
      'sort',
    ],
    catalogue: {
      rows: [
        { when: '`--compress-program`', effect: 'runs a program', risk: 'runs' },
        { when: '`-o`, `--output`', effect: 'writes a file', risk: 'writes' },
      ],
      classify: (inv) => (has(inv, '--compress-program') ? 0 : has(inv, '-o', '--output') ? 1 : null),
    },
  },
  {
    names: ['tee'],
    catalogue: {
      rows: [{ when: 'every invocation', effect: 'writes its file arguments', risk: 'writes' }],
      classify: always,
    },
  },
  {
    names: ['awk', 'gawk', 'mawk', 'nawk'],
    valuedShort: 'fvFilE',
    valuedLong: ['file', 'assign', 'field-separator', 'include', 'load', 'exec', 'source'],
    // its program is code; the catalogue says which programs run commands or write
    runner: { kind: 'runs_code' },
    catalogue: {
      rows: [
        {
          when: 'a program with `system`, `|`, `>`, `getline`, `close`, `fflush`, `@`, or one read from a file (`-f`, `-i`, `-l`, `-E`)',
          effect: 'runs commands and writes files',
          risk: 'runs',
        },
      ],
      classify: (inv) => {
        if (has(inv, '-f', '--file', '-i', '--include', '-l', '--load', '-E', '--exec')) return 0;
        const progs = values(inv, '--source');
        if (progs.length === 0 && inv.positional.length > 0) progs.push(inv.positional[0]);
        return progs.some((p) => AWK_RUNS.test(p)) || progs.length === 0 ? 0 : null;
      },
    },
  },
  {
    names: ['less', 'more', 'most', 'man'],
    valuedShort: 'bhjkopPtTxyz',
    catalogue: {
      rows: [
        {
          when: 'every invocation',
          effect: 'run input preprocessors and editors (`LESSOPEN`, `v`, `!`)',
          risk: 'config',
        },
      ],
      classify: always,
    },
  },
  {
    names: ['tar'],
    bundledFirst: true,
    valuedShort: 'fbCFgHIKLNTVX',
    valuedLong: [
      'file',
      'directory',
      'blocking-factor',
      'info-script',
      'new-volume-script',
      'listed-incremental',
      'format',
      'use-compress-program',
      'files-from',
      'label',
      'exclude-from',
      'starting-file',
      'newer',
      'after-date',
      'tape-length',
      'to-command',
      'owner',
      'group',
      'mode',
      'mtime',
      'transform',
      'xform',
      'exclude',
      'index-file',
      'rsh-command',
      'rmt-command',
      'record-size',
      'suffix',
    ],
    longFlags: { list: 't', extract: 'x', get: 'x', create: 'c', append: 'r', update: 'u', file: 'f', directory: 'C' },
    catalogue: {
      rows: [
        {
          when: '`--to-command`, `-I`, `--use-compress-program`, `--checkpoint-action`, `-F`, `--info-script`, `--new-volume-script`, `--rsh-command`, `--rmt-command`, an archive `host:file`',
          effect: 'runs programs',
          risk: 'runs',
        },
        {
          when: 'anything but listing (`t`, `--list`); `-g`, `--listed-incremental`, `--index-file`, `--remove-files`',
          effect: 'extracts or writes archives',
          risk: 'writes',
        },
      ],
      classify: (inv) => {
        if (
          has(
            inv,
            '--to-command',
            '-I',
            '--use-compress-program',
            '--checkpoint-action',
            '-F',
            '--info-script',
            '--new-volume-script',
            '--rsh-command',
            '--rmt-command',
          )
        )
          return 0;
        if (!has(inv, '--force-local') && values(inv, '-f').some((f) => f.includes(':'))) return 0;
        if (
          !has(inv, '-t') ||
          has(inv, '-x', '-c', '-r', '-u', '-A', '-d', '--delete', '-g', '--index-file', '--remove-files')
        )
          return 1;
        return null;
      },
    },
  },
  {
    names: ['rg'],
    valuedShort: 'efgtTmABCjMrEd',
    valuedLong: [
      'pre',
      'pre-glob',
      'regexp',
      'file',
      'glob',
      'iglob',
      'type',
      'type-not',
      'max-count',
      'after-context',
      'before-context',
      'context',
      'threads',
      'max-columns',
      'replace',
      'encoding',
      'max-depth',
      'hostname-bin',
      'type-add',
      'type-clear',
      'ignore-file',
      'sort',
      'sortr',
      'colors',
      'path-separator',
      'max-filesize',
      'engine',
      'context-separator',
      'dfa-size-limit',
      'regex-size-limit',
      'hyperlink-format',
    ],
    catalogue: {
      rows: [
        {
          when: '`--pre`, `--hostname-bin`, `-z`, `--search-zip`',
          effect: 'runs a preprocessor, a program or decompressors on every file',
          risk: 'runs',
        },
      ],
      classify: (inv) => (has(inv, '--pre', '--hostname-bin', '-z', '--search-zip') ? 0 : null),
    },
  },
  {
    names: ['uniq'],
    valuedShort: 'fsw',
    valuedLong: ['skip-fields', 'skip-chars', 'check-chars', 'group', 'all-repeated'],
    catalogue: {
      rows: [{ when: 'a second file argument', effect: 'writes the output file', risk: 'writes' }],
      classify: (inv) => (inv.positional.length >= 2 ? 0 : null),
    },
  },
  {
    names: ['tree'],
    valuedShort: 'LPIo',
    catalogue: {
      rows: [{ when: '`-o`', effect: 'writes a file', risk: 'writes' }],
      classify: (inv) => (has(inv, '-o') ? 0 : null),
    },
  },
  {
    names: ['curl'],
    valuedShort: 'oDcKbdeEFHuxXAmTrwYyzC',
    valuedLong: [
      'output',
      'dump-header',
      'cookie-jar',
      'trace',
      'trace-ascii',
      'config',
      'libcurl',
      'cookie',
      'data',
      'data-binary',
      'data-raw',
      'data-urlencode',
      'referer',
      'cert',
      'form',
      'header',
      'user',
      'proxy',
      'request',
      'user-agent',
      'max-time',
      'upload-file',
      'range',
      'write-out',
      'output-dir',
      'connect-timeout',
      'retry',
      'url',
      'json',
    ],
    catalogue: {
      rows: [
        {
          when: '`-o`, `-O`, `--output`, `--remote-name`, `-D`, `--dump-header`, `-c`, `--cookie-jar`, `--trace`, `-K`, `--config`, `--libcurl`, `--output-dir`',
          effect: 'writes files; reads options (and output paths) from a file',
          risk: 'writes',
        },
      ],
      classify: (inv) =>
        has(
          inv,
          '-o',
          '-O',
          '--output',
          '--remote-name',
          '--remote-name-all',
          '-D',
          '--dump-header',
          '-c',
          '--cookie-jar',
          '--trace',
          '--trace-ascii',
          '-K',
          '--config',
          '--libcurl',
          '--output-dir',
        )
          ? 0
          : null,
    },
  },
  {
    names: ['wget'],
    catalogue: {
      rows: [{ when: 'every invocation', effect: 'writes the downloaded file', risk: 'writes' }],
      classify: always,
    },
  },
  {
    names: ['date'],
    valuedShort: 'dfrsI',
    valuedLong: ['date', 'file', 'reference', 'set'],
    catalogue: {
      rows: [{ when: '`-s`, `--set`', effect: 'sets the clock', risk: 'writes' }],
      classify: (inv) => (has(inv, '-s', '--set') ? 0 : null),
    },
  },
  {
    names: ['dd'],
    catalogue: {
      rows: [{ when: '`of=`', effect: 'writes a file', risk: 'writes' }],
      classify: (inv) => (inv.positional.some((w) => w.startsWith('of=')) ? 0 : null),
    },
  },
  {
    names: ['unzip'],
    valuedShort: 'dxP',
    catalogue: {
      rows: [{ when: 'anything but `-l`, `-v`, `-t`, `-Z`', effect: 'extracts (writes) files', risk: 'writes' }],
      classify: (inv) => (has(inv, '-l', '-v', '-t', '-Z') ? null : 0),
    },
  },
  {
    names: ['yq'],
    attachedShort: '',
    valuedLong: ['output-format', 'input-format', 'expression', 'from-file'],
    catalogue: {
      rows: [
        { when: '`--from-file`', effect: 'reads its expression from a file', risk: 'runs' },
        { when: '`-i`, `--inplace`', effect: 'edits files in place', risk: 'writes' },
      ],
      classify: (inv) => (has(inv, '--from-file') ? 0 : has(inv, '-i', '--inplace') ? 1 : null),
    },
  },
  {
    names: ['make', 'gmake'],
    valuedShort: 'CfIoWE',
    optionalShort: 'jl',
    valuedLong: [
      'directory',
      'file',
      'makefile',
      'include-dir',
      'old-file',
      'assume-old',
      'what-if',
      'new-file',
      'assume-new',
      'eval',
      'jobserver-auth',
      'debug-file',
      'shuffle',
    ],
    longFlags: { directory: 'C', file: 'f', makefile: 'f', eval: 'E', 'include-dir': 'I' },
    catalogue: {
      rows: [
        {
          when: '`-f`, `--file`, `--makefile`, `-C`, `--directory`, `-E`, `--eval`, `-I`',
          effect: 'runs recipes from a makefile the line names',
          risk: 'runs',
        },
      ],
      classify: (inv) => (has(inv, '-f', '-C', '-E', '-I') ? 0 : null),
    },
  },
  // programs with a subcommand after global options (knowing the valued ones finds the subcommand)
  {
    names: ['docker', 'podman'],
    valuedShort: 'cHl',
    valuedLong: ['config', 'context', 'host', 'log-level', 'tlscacert', 'tlscert', 'tlskey'],
  },
  {
    names: ['kubectl'],
    valuedShort: 'ns',
    valuedLong: ['namespace', 'context', 'cluster', 'kubeconfig', 'server', 'user', 'token'],
  },
  {
    names: ['npm', 'pnpm', 'yarn'],
    valuedShort: 'wC',
    valuedLong: ['prefix', 'workspace', 'cwd', 'userconfig', 'registry', 'filter', 'dir'],
    // runs package scripts and the code `-c`/`--call` or `exec` give; the catalogue says which
    runner: { kind: 'runs_code' },
    catalogue: {
      rows: [
        {
          when: '`-c`, `--call`, and the subcommands `exec`, `x`, `dlx`, `explore`',
          effect: 'runs the command or shell code given',
          risk: 'runs',
        },
      ],
      classify: (inv) =>
        has(inv, '-c', '--call') || ['exec', 'x', 'dlx', 'explore'].includes(inv.positional[0] ?? '') ? 0 : null,
    },
  },
  { names: ['cargo'], valuedShort: 'CZ', valuedLong: ['config', 'color', 'manifest-path'] },
  { names: ['go'], valuedShort: 'C' },
  {
    names: ['systemctl'],
    valuedShort: 'tpHMsno',
    valuedLong: ['type', 'property', 'host', 'machine', 'signal', 'lines', 'output', 'state', 'root'],
  },
  {
    names: ['helm', 'terraform', 'gh'],
    valuedShort: 'nR',
    valuedLong: ['namespace', 'kube-context', 'kubeconfig', 'chdir', 'repo'],
  },
  // common readers: valued options known, so a value is not taken for the subcommand
  {
    names: ['ls'],
    valuedShort: 'ITw',
    valuedLong: [
      'ignore',
      'hide',
      'width',
      'tabsize',
      'block-size',
      'format',
      'indicator-style',
      'quoting-style',
      'sort',
      'time',
      'time-style',
    ],
  },
  {
    names: ['head', 'tail'],
    valuedShort: 'ncs',
    valuedLong: ['lines', 'bytes', 'sleep-interval', 'pid', 'max-unchanged-stats'],
  },
  {
    names: ['grep', 'egrep', 'fgrep'],
    valuedShort: 'efmABCdD',
    valuedLong: [
      'regexp',
      'file',
      'max-count',
      'after-context',
      'before-context',
      'context',
      'directories',
      'devices',
      'include',
      'exclude',
      'exclude-dir',
      'exclude-from',
      'label',
      'binary-files',
    ],
  },
  {
    names: [
      'cat',
      'wc',
      'pwd',
      'echo',
      'true',
      'false',
      'id',
      'whoami',
      'uname',
      'stat',
      'file',
      'du',
      'df',
      'diff',
      'cmp',
    ],
  },
  {
    names: ['rm'],
    longFlags: { recursive: 'r', force: 'f', dir: 'd', verbose: 'v', interactive: 'i' },
    shortAliases: { R: 'r' },
  },
  {
    names: ['cp'],
    valuedShort: 'St',
    valuedLong: ['suffix', 'target-directory'],
    longFlags: { recursive: 'r', force: 'f', archive: 'a', verbose: 'v', link: 'l', 'symbolic-link': 's' },
    shortAliases: { R: 'r' },
  },
  {
    names: ['mv'],
    valuedShort: 'St',
    valuedLong: ['suffix', 'target-directory'],
    longFlags: { force: 'f', verbose: 'v', 'no-clobber': 'n', update: 'u' },
  },
  {
    names: ['chmod', 'chown', 'chgrp'],
    longFlags: { recursive: 'R', verbose: 'v', changes: 'c', silent: 'f', quiet: 'f' },
  },
  { names: ['ln'], valuedShort: 'St', longFlags: { symbolic: 's', force: 'f', verbose: 'v' } },
  { names: ['mkdir', 'rmdir'], valuedShort: 'm', valuedLong: ['mode'], longFlags: { parents: 'p', verbose: 'v' } },
  {
    names: ['shred'],
    valuedShort: 'ns',
    valuedLong: ['iterations', 'size', 'random-source'],
    longFlags: { remove: 'u', zero: 'z', force: 'f', verbose: 'v' },
  },
];

const GIT_RUNS_SUBCOMMANDS = new Set([
  'config',
  'filter-branch',
  'bisect',
  'submodule',
  'difftool',
  'mergetool',
  'daemon',
  'instaweb',
  'credential',
  'hook',
]);

/** Every spec, in table order (wrappers, shells, interpreters, readers). */
export const PROGRAM_SPECS: readonly ProgramSpec[] = [...WRAPPERS, ...SHELLS, ...INTERPRETERS, ...READERS];

interface Compiled {
  spec: ProgramSpec;
  valuedShort: Set<string>;
  attachedShort: Set<string>;
  optionalShort: Set<string>;
  valuedLong: Set<string>;
  codeShort: Set<string>;
  codeLong: Set<string>;
  info: Set<string> | null;
}
const BY_NAME = new Map<string, Compiled>();
for (const spec of PROGRAM_SPECS) {
  const r = spec.runner;
  const c: Compiled = {
    spec,
    valuedShort: new Set(spec.valuedShort ?? ''),
    attachedShort: new Set(spec.attachedShort ?? ''),
    optionalShort: new Set(spec.optionalShort ?? ''),
    valuedLong: new Set(spec.valuedLong ?? []),
    codeShort: new Set(r?.kind === 'runs_command' ? (r.codeShort ?? '') : ''),
    codeLong: new Set(r?.kind === 'runs_command' ? (r.codeLong ?? []) : []),
    info: r?.kind === 'runs_code' ? new Set(r.info ?? COMMON_INFO) : null,
  };
  for (const n of spec.names) {
    if (BY_NAME.has(n)) throw new Error(`programs.ts: ${n} is listed twice`);
    BY_NAME.set(n, c);
  }
}

export function baseName(word: string): string {
  const i = word.lastIndexOf('/');
  return i === -1 ? word : word.slice(i + 1);
}

/**
 * `python3.12` → `python3`'s knowledge, `perl5.36` → `perl`'s, `not-14` → `not`'s: a trailing
 * version is dropped, and before it a target triple (`perl5.36-x86_64-linux-gnu`). By Map: a
 * name such as `constructor` or `__proto__` is no program's.
 */
function compiledFor(program: string): Compiled | undefined {
  const exact = BY_NAME.get(program);
  if (exact) return exact;
  const triple = TARGET_TRIPLE.exec(program);
  if (triple && triple.index > 0) return compiledFor(program.slice(0, triple.index));
  let end = program.length;
  while (end > 0 && isVersionChar(program.charCodeAt(end - 1))) end--;
  if (end === program.length || end === 0) return undefined;
  return BY_NAME.get(program.slice(0, end));
}
/** A trailing `-ARCH-linux-ABI` (Debian's multiarch names: `perl5.36-x86_64-linux-gnu`). */
const TARGET_TRIPLE = /-[a-z0-9_]+-linux-[a-z0-9_]+$/;
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isVersionChar(c: number): boolean {
  return isDigit(c) || c === 46 || c === 45; // digits, '.', '-'
}

export function programSpec(program: string): ProgramSpec | undefined {
  return compiledFor(baseName(program))?.spec;
}

/**
 * What the gate knows of a program as a runner: `runs_command` (it runs its arguments, an inner
 * command or the command of an option like `find -exec`, which deny rules are matched against;
 * given none, a program with `readsStdin` runs code), `runs_code` (it runs code given inline, from
 * a file or from standard input: never covered by a bypass, a human under a deny rule on any
 * program — every invocation but the info options, or for a catalogued one like `awk`/`npm` the
 * invocations its `runs` rows name), or null.
 */
export function gateRunnerKnowledge(program: string): 'runs_command' | 'runs_code' | null {
  const spec = compiledFor(baseName(program))?.spec;
  return spec?.runner?.kind ?? (spec?.execOptions ? 'runs_command' : null);
}

/** Bound on the words read per argv (a line has at most 4,096 words: shell-analysis MAX_WORDS). */
const MAX_ARGS = 8192;

/**
 * Reads an argv with its program's option knowledge. Options: `--name`, `--name=v` (the value
 * `v`), `--name v` for a valued long option, `-abc` (a cluster: `-a -b -c`; a valued letter takes
 * the rest of the cluster or the next word), find-style `-name v`, tar's dash-less first cluster;
 * `--` ends options. Long options fold onto short ones where the table says (`--recursive` ≡
 * `-r`). Options after positional words are read too (GNU argument order).
 */
export function parseInvocation(argv: readonly string[]): Invocation {
  const program = baseName(argv[0] ?? '');
  const c = compiledFor(program);
  const spec = c?.spec;
  const options: ParsedOption[] = [];
  const positional: string[] = [];
  const ambiguous = new Set<number>();
  let dashdash = false;
  let unknownArity = false;
  const n = Math.min(argv.length, MAX_ARGS);
  for (let i = 1; i < n; i++) {
    const a = argv[i];
    if (dashdash || a === '-' || a.length < 2 || a.charCodeAt(0) !== 45 /* - */) {
      if (i === 1 && spec?.bundledFirst && a.length > 0 && !dashdash && isLetters(a)) {
        // tar tf a.tar: the letters are options, valued ones take the next words in order
        for (const ch of a) {
          const name = `-${spec.shortAliases?.[ch] ?? ch}`;
          if (c?.valuedShort.has(ch)) options.push({ name, value: argv[++i] ?? null });
          else options.push({ name, value: null });
        }
        continue;
      }
      if (unknownArity) ambiguous.add(positional.length);
      unknownArity = false;
      positional.push(a);
      continue;
    }
    unknownArity = false;
    if (a === '--') {
      dashdash = true;
      continue;
    }
    if (spec?.singleDashWords && a.charCodeAt(1) !== 45) {
      const word = a.slice(1);
      if (FIND_EXEC_WORDS.has(a)) {
        // -exec cmd … ; : the command is the option's value (unwrapped by command-match)
        let j = i + 1;
        while (j < n && argv[j] !== ';' && argv[j] !== '+') j++;
        options.push({ name: a, value: argv.slice(i + 1, j).join(' ') });
        i = j;
        continue;
      }
      if (word === 'fprintf') {
        options.push({ name: a, value: `${argv[i + 1] ?? ''} ${argv[i + 2] ?? ''}` });
        i += 2;
        continue;
      }
      options.push({ name: a, value: c?.valuedLong.has(word) ? (argv[++i] ?? null) : null });
      continue;
    }
    if (a.charCodeAt(1) === 45) {
      const eq = a.indexOf('=');
      const long = eq === -1 ? a.slice(2) : a.slice(2, eq);
      const folded = spec?.longFlags?.[long];
      const name = folded !== undefined ? `-${folded}` : `--${long}`;
      if (eq !== -1) options.push({ name, value: a.slice(eq + 1) });
      else if (c?.valuedLong.has(long)) options.push({ name, value: argv[++i] ?? null });
      else {
        options.push({ name, value: null });
        unknownArity = spec === undefined;
      }
      continue;
    }
    // a short cluster
    for (let j = 1; j < a.length; j++) {
      const ch = a[j];
      const name = `-${spec?.shortAliases?.[ch] ?? ch}`;
      if (c?.valuedShort.has(ch)) {
        options.push({ name, value: j + 1 < a.length ? a.slice(j + 1) : (argv[++i] ?? null) });
        break;
      }
      if (c?.attachedShort.has(ch)) {
        options.push({ name, value: j + 1 < a.length ? a.slice(j + 1) : null });
        break;
      }
      options.push({ name, value: null });
      if (j === a.length - 1) unknownArity = spec === undefined || c?.optionalShort.has(ch) === true;
    }
  }
  return { argv, program, spec, options, positional, ambiguous };
}

const FIND_EXEC_WORDS = new Set(FIND_EXEC);

function isLetters(w: string): boolean {
  for (let i = 0; i < w.length; i++) {
    const ch = w.charCodeAt(i) | 32;
    if (ch < 97 || ch > 122) return false;
  }
  return true;
}

export interface CatalogueVerdict {
  program: string;
  row: CatalogueRow;
}

/** The catalogue row an invocation falls under (interpreters: anything but their info options), or null. */
export function catalogueVerdict(inv: Invocation): CatalogueVerdict | null {
  const spec = inv.spec;
  if (!spec) return null;
  if (spec.catalogue) {
    const i = spec.catalogue.classify(inv);
    return i === null ? null : { program: inv.program, row: spec.catalogue.rows[i] };
  }
  if (spec.runner?.kind === 'runs_code' && runsCode(inv)) return { program: inv.program, row: INTERPRETER_ROW };
  if (spec.runner?.kind === 'runs_command' && readsStdinCode(inv, spec.runner))
    return { program: inv.program, row: STDIN_ROW };
  return null;
}

export const STDIN_ROW: CatalogueRow = {
  when: 'no command or code given on the line (`sh`, `bash -s`, `sh script`, `script`, `newgrp`, `sg GROUP`)',
  effect: 'run commands read from standard input or a script file, which the gate cannot see',
  risk: 'runs',
};

/** A runner given no command or code on the line reads them from standard input or a file (`readsStdin`). */
function readsStdinCode(inv: Invocation, r: RunsCommand): boolean {
  if (!r.readsStdin) return false;
  const code = [...(r.codeShort ?? '')].map((c) => `-${c}`).concat((r.codeLong ?? []).map((l) => `--${l}`));
  if (inv.options.some((o) => code.includes(o.name))) return false;
  return r.readsStdin === 'unless_code_option' || inv.positional.length <= (r.leading ?? 0);
}

export const INTERPRETER_ROW: CatalogueRow = {
  when: 'anything but their version and help options (`--version`, `--help`, …)',
  effect: 'run code given inline (`-c`, `-e`, `-r`), from a file or from standard input',
  risk: 'runs',
};

/** An interpreter's invocation runs code unless its words are all info options (`python3 --version`). */
function runsCode(inv: Invocation): boolean {
  const info = compiledFor(inv.program)?.info;
  if (!info || inv.argv.length < 2) return true;
  for (let i = 1; i < inv.argv.length; i++) if (!info.has(inv.argv[i])) return true;
  return false;
}

/** The knowledge command-match needs to unwrap a wrapper. */
export function runnerSpec(program: string): {
  runner: RunsCommand;
  valuedShort: ReadonlySet<string>;
  valuedLong: ReadonlySet<string>;
  codeShort: ReadonlySet<string>;
  codeLong: ReadonlySet<string>;
  singleDashWords: boolean;
} | null {
  const c = compiledFor(baseName(program));
  if (!c || c.spec.runner?.kind !== 'runs_command') return null;
  return {
    runner: c.spec.runner,
    valuedShort: c.valuedShort,
    valuedLong: c.valuedLong,
    codeShort: c.codeShort,
    codeLong: c.codeLong,
    singleDashWords: c.spec.singleDashWords === true,
  };
}
