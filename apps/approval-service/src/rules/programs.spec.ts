import { effectiveCommands, runsCodeReason, unallowableReason } from './command-match';
import { catalogueMarkdown, READ_ONLY_CATALOGUE, runnersMarkdown } from './read-only-catalogue';
import { gateRunnerKnowledge, parseInvocation, PROGRAM_SPECS } from './programs';

/** The program table is the one source: everything derived from it covers all of it. */
describe('program table (programs.ts): the derivations are complete', () => {
  const docs = `${catalogueMarkdown()}\n${runnersMarkdown()}`;
  const runsCommand = PROGRAM_SPECS.filter((s) => s.runner?.kind === 'runs_command');
  const runsCode = PROGRAM_SPECS.filter((s) => s.runner?.kind === 'runs_code');

  it('every program with catalogue or runner knowledge appears in the docs tables', () => {
    for (const s of PROGRAM_SPECS)
      if (s.catalogue || s.runner) for (const n of s.names) expect(docs).toContain(`\`${n}\``);
    expect(READ_ONLY_CATALOGUE.length).toBeGreaterThan(20);
  });

  it('every runs_command wrapper unwraps: `X rm marker` (or its -c code) runs rm, and no allow rule matches it', () => {
    for (const s of runsCommand)
      for (const n of s.names) {
        expect(gateRunnerKnowledge(n)).toBe('runs_command');
        expect(gateRunnerKnowledge(`/usr/bin/${n}`)).toBe('runs_command');
        const r = s.runner?.kind === 'runs_command' ? s.runner : null;
        if (r?.noPositionalCommand && !r.codeShort && !r.codeLong) {
          // `newgrp`: never a command on the line, always a shell reading standard input
          expect(runsCodeReason([n])).not.toBeNull();
          expect(runsCodeReason([n, 'grp'])).not.toBeNull();
          continue;
        }
        const lead = Array.from({ length: r?.leading ?? 0 }, () => '1');
        const argv = r?.noPositionalCommand ? [n, '-c', 'rm marker', '/dev/null'] : [n, ...lead, 'rm', 'marker'];
        const seen = effectiveCommands(argv).map((a) => a.join(' '));
        expect({ n, ran: seen.some((a) => a === 'rm marker') }).toEqual({ n, ran: true });
        expect(unallowableReason({ argv, assignments: [], redirections: [] })).toContain('runs other commands');
      }
  });

  it('every runs_code interpreter runs code with an argument and is unallowable, but not with --version', () => {
    for (const s of runsCode)
      for (const n of s.names) {
        if (s.catalogue) {
          // its code is judged by its catalogue rows (`awk '{print}'` is read-only, `awk 'BEGIN{system(…)}'` runs)
          expect(gateRunnerKnowledge(n)).toBe('runs_code');
          expect(s.catalogue.rows.some((r) => r.risk === 'runs')).toBe(true);
          continue;
        }
        expect(gateRunnerKnowledge(n)).toBe('runs_code');
        expect(runsCodeReason([n, '-e', 'x'])).not.toBeNull();
        expect(runsCodeReason([n, 'script'])).not.toBeNull();
        expect(runsCodeReason([n])).not.toBeNull(); // reads code from standard input
        expect(runsCodeReason([n, '--version'])).toBeNull();
      }
    expect(gateRunnerKnowledge('python3.12')).toBe('runs_code');
    expect(gateRunnerKnowledge('perl5.36')).toBe('runs_code');
    expect(gateRunnerKnowledge('ls')).toBeNull();
    expect(gateRunnerKnowledge('rm')).toBeNull();
  });

  it('skips options and their values by the table (short, clustered, attached, long, --opt=v)', () => {
    const sub = (...argv: string[]) => parseInvocation(argv).positional[0];
    expect(sub('git', '-C', '.', 'status')).toBe('status');
    expect(sub('git', '-C.', 'status')).toBe('status');
    expect(sub('git', '-ck=v', 'push')).toBe('push');
    expect(sub('git', '--git-dir', 'x', '--work-tree=y', 'push')).toBe('push');
    expect(sub('make', '-kfx', 'deploy')).toBe('deploy');
    expect(sub('sed', '-i.bak', '-n', '1p')).toBe('1p');
    expect(sub('find', '.', '-name', 'x')).toBe('.');
    expect(parseInvocation(['tar', 'tf', 'a.tar']).options.map((o) => [o.name, o.value])).toEqual([
      ['-t', null],
      ['-f', 'a.tar'],
    ]);
    expect(parseInvocation(['make', '-j', '4', 'deploy']).ambiguous.has(0)).toBe(true);
  });
});
