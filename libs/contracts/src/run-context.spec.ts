import fc from 'fast-check';
import { enabledMcpServersRefusal, RunContextInput } from './run-context';
import { CronJobInput } from './scheduler';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

const inside = (p: string) => p === '/workspace' || (p.startsWith('/workspace/') && !p.split('/').includes('..'));

describe('RunContextInput', () => {
  it('normalises paths into /workspace/… and refuses the rest', () => {
    expect(
      RunContextInput.parse({
        working_directory: 'src/../app',
        allow_fs_reads: ['docs', '/workspace/./data/'],
        allow_fs_writes: ['out'],
      }),
    ).toEqual({
      working_directory: '/workspace/app',
      allow_fs_reads: ['/workspace/docs', '/workspace/data'],
      allow_fs_writes: ['/workspace/out'],
    });
    for (const bad of [
      { working_directory: '/etc' },
      { working_directory: '../other-user' },
      { allow_fs_writes: ['/workspace/../x'] },
      { allow_fs_reads: ['a\0b'] },
      { allow_fs_reads: ['user-memory/notes'] },
      { allow_fs_writes: ['/'] },
      { unknown: 1 },
    ]) {
      expect([bad, RunContextInput.safeParse(bad).success]).toEqual([bad, false]);
    }
  });

  it('every generated path it accepts lies inside the workspace', () => {
    const seg = fc.constantFrom('..', '.', '', 'a', 'workspace', '/', '\\', '~', '%2e%2e', 'user-memory', '\0');
    const path = fc
      .tuple(fc.boolean(), fc.array(seg, { maxLength: 8 }))
      .map(([abs, s]) => `${abs ? '/' : ''}${s.join('/')}`);
    fc.assert(
      fc.property(path, path, (a, b) => {
        const r = RunContextInput.safeParse({ working_directory: a, allow_fs_reads: [b], allow_fs_writes: [a] });
        if (!r.success) return;
        for (const p of [r.data.working_directory, ...(r.data.allow_fs_reads ?? []), ...(r.data.allow_fs_writes ?? [])])
          if (p !== undefined) expect([p, inside(p)]).toEqual([p, true]);
      }),
      { seed, numRuns: 5000 },
    );
  });

  it('refuses NUL bytes and lone surrogates in every stored text (Postgres text holds neither), and keeps the rest', () => {
    const poison = fc.constantFrom('\0', '\uD800', '\uDFFF', 'a\uDBFFb');
    const text = fc
      .tuple(fc.string({ unit: 'grapheme', maxLength: 20 }), poison, fc.string({ maxLength: 20 }))
      .map(([a, p, b]) => a + p + b);
    fc.assert(
      fc.property(text, fc.constantFrom('security_group', 'system_prompt'), (t, field) => {
        const body = field === 'system_prompt' ? { system_prompt: [t] } : { security_group: t.slice(-64) };
        const r = RunContextInput.safeParse(body);
        return !r.success;
      }),
      { seed, numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 64 }), (t) => {
        const clean = t.replace(/\0/g, '');
        fc.pre(clean.length > 0);
        return RunContextInput.safeParse({ system_prompt: [clean] }).success;
      }),
      { seed, numRuns: 1000 },
    );
  });

  it('refuses a pattern as a pre-authorised path, naming the accepted form (cron jobs too)', () => {
    // A pre-authorised path covers everything under it; `*` would read as a pattern and match nothing.
    for (const field of ['allow_fs_writes', 'allow_fs_reads'] as const) {
      for (const p of ['proj/*', '/workspace/proj/**', 'docs/*.md', '*']) {
        const r = RunContextInput.safeParse({ [field]: [p] });
        expect([p, r.success]).toEqual([p, false]);
        if (!r.success) {
          expect(r.error.issues[0].path).toEqual([field, 0]);
          expect(r.error.issues[0].message).toContain('everything under it');
        }
        const job = CronJobInput.safeParse({
          title: 't',
          prompt: 'p',
          cron: '0 * * * *',
          run_context: { [field]: [p] },
        });
        expect([p, job.success]).toEqual([p, false]);
      }
    }
  });

  it("a cron job's run context is validated and normalised as a session's is", () => {
    const base = { title: 't', prompt: 'p', cron: '0 * * * *' };
    expect(
      CronJobInput.parse({
        ...base,
        run_context: { working_directory: 'a/../b', allow_fs_writes: ['out/'], allow_approvals: true },
      }).run_context,
    ).toEqual({ working_directory: '/workspace/b', allow_fs_writes: ['/workspace/out'], allow_approvals: true });
    for (const rc of [
      { working_directory: '/etc' },
      { allow_fs_writes: ['/workspace/../x'] },
      { allow_fs_reads: ['/'] },
      { allow_fs_writes: ['user-memory/notes'] },
    ]) {
      expect([rc, CronJobInput.safeParse({ ...base, run_context: rc }).success]).toEqual([rc, false]);
    }
  });
});

describe('enabledMcpServersRefusal', () => {
  const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
  it("accepts exactly lists of the caller's enabled servers; names the first other entry and why", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ name, enabled: fc.boolean() }), { selector: (s) => s.name, maxLength: 6 }),
        fc.uniqueArray(name, { maxLength: 6 }),
        fc.constantFrom('', 'run_context'),
        (own, names, at) => {
          const refusal = enabledMcpServersRefusal(names, own, at);
          const bad = names.findIndex((n) => !own.some((s) => s.name === n && s.enabled));
          if (bad < 0) return expect(refusal).toBeNull();
          const field = `${at ? `${at}.` : ''}enabled_mcp_servers.${bad}`;
          expect(refusal?.field).toBe(field);
          const disabled = own.some((s) => s.name === names[bad]);
          expect(refusal?.message).toContain(
            disabled ? `your MCP server ${names[bad]} is disabled` : `you have no MCP server named ${names[bad]}`,
          );
        },
      ),
      { seed, numRuns: 2000 },
    );
  });
});
