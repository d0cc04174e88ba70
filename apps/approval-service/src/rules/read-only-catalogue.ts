import {
  CatalogueRow,
  catalogueVerdict,
  INTERPRETER_ROW,
  parseInvocation,
  PROGRAM_SPECS,
  ProgramSpec,
  Risk,
  STDIN_ROW,
} from './programs';

/**
 * Programs an operator may allow as "read-only" that can nonetheless write, delete or execute,
 * with the invocations that do — derived from the program table (programs.ts). An allow rule that
 * matches such an invocation yields Require; a narrow session approval never covers one of risk
 * `writes` or `runs`; one of risk `runs` is never covered by any bypass and needs a human under a
 * deny rule. The tables in docs/approval.md are generated from here (`catalogueMarkdown`,
 * `runnersMarkdown`), and a test checks that they agree.
 */
export interface CatalogueEntry {
  programs: readonly string[];
  when: string;
  effect: string;
  risk: Risk;
}

const INTERPRETERS = PROGRAM_SPECS.filter((s) => s.runner?.kind === 'runs_code');

export const READ_ONLY_CATALOGUE: readonly CatalogueEntry[] = [
  ...PROGRAM_SPECS.filter(
    (s): s is ProgramSpec & { catalogue: NonNullable<ProgramSpec['catalogue']> } => !!s.catalogue,
  ).flatMap((s) => s.catalogue.rows.map((r: CatalogueRow) => ({ programs: s.names, ...r }))),
  { programs: INTERPRETERS.flatMap((s) => s.names), ...INTERPRETER_ROW },
  {
    programs: PROGRAM_SPECS.filter((s) => s.runner?.kind === 'runs_command' && s.runner.readsStdin).flatMap(
      (s) => s.names,
    ),
    ...STDIN_ROW,
  },
];

/** Why this invocation is not read-only (an allow rule then yields Require), or null. */
export function writesOrRuns(argv: readonly string[]): string | null {
  const v = catalogueVerdict(parseInvocation(argv));
  if (!v) return null;
  return `${v.program} ${v.row.when === 'every invocation' ? '' : `with ${v.row.when} `}${v.row.effect}`.replace(
    /`/g,
    '',
  );
}

/** The invocation's risk by the catalogue (`config`, `writes`, `runs`), or null when it is read-only. */
export function catalogueRisk(argv: readonly string[]): Risk | null {
  return catalogueVerdict(parseInvocation(argv))?.row.risk ?? null;
}

const RISK_WORDS: Record<Risk, string> = {
  config: 'reads configuration that can run programs',
  writes: 'writes',
  runs: 'runs code',
};

/** The docs table (docs/approval.md, between the catalogue markers). */
export function catalogueMarkdown(): string {
  const rows = READ_ONLY_CATALOGUE.map(
    (e) => `| ${e.programs.map((p) => `\`${p}\``).join(', ')} | ${e.when} | ${e.effect} | ${RISK_WORDS[e.risk]} |`,
  );
  return [
    '| program | invocations that are not read-only | what they do | kind |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

/** The docs table of programs that run other commands (docs/approval.md, between the runners markers). */
export function runnersMarkdown(): string {
  const rows = PROGRAM_SPECS.filter((s) => s.runner?.kind === 'runs_command').map((s) => {
    const r = s.runner?.kind === 'runs_command' ? s.runner : null;
    const how = r?.shell
      ? 'its arguments are shell code'
      : r?.noPositionalCommand
        ? 'runs the shell code of its option (`-c`), or a shell reading standard input'
        : `runs its arguments as a command${r?.codeShort || r?.codeLong?.length ? '; the value of `-c` is shell code' : ''}`;
    const stdin =
      r?.readsStdin === 'unless_code_option'
        ? '; without its code option, it runs commands from standard input or a script file (runs code)'
        : r?.readsStdin === 'unless_command'
          ? '; given no command, it runs commands from standard input (runs code)'
          : '';
    return `| ${s.names.map((p) => `\`${p}\``).join(', ')} | ${how}${stdin} |`;
  });
  return ['| program | what the gate reads as the command it runs |', '| --- | --- |', ...rows].join('\n');
}
