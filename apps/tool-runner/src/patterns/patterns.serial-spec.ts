import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Bus } from '@skald/messaging/bus-port';
import { RunnerOverNats, startRunnerOverNats } from '../testing-fixtures/runner-over-nats';
import { recordAttackSuite } from '@skald/testing';

/**
 * Hostile globs and regexes sent to the real tool runner over NATS by one user, while another user
 * reads a file on the same runner: every hostile call answers (a result or a clear error) within
 * 2 s, and the other user's read_file within 200 ms the whole time.
 */
describe('tool-runner: hostile grep_files patterns (over NATS)', () => {
  let base: string;
  let client: Bus;
  let runner: RunnerOverNats;
  const attacker = { userId: randomUUID(), role: 'user' as const };
  const victim = { userId: randomUUID(), role: 'user' as const };

  beforeAll(async () => {
    runner = await startRunnerOverNats('tool-runner-patterns', { SKALD_SANDBOX: 'none' });
    ({ client, base } = runner);

    // The attacker's workspace: a deep tree whose paths and lines are what backtracking feeds on.
    const home = join(base, 'workspaces', attacker.userId);
    let dir = home;
    for (let depth = 0; depth < 30; depth++) {
      dir = join(dir, 'a');
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, `${'a'.repeat(40)}.txt`), `${'a'.repeat(3000)}!\n`.repeat(20));
    }
    const victimHome = join(base, 'workspaces', victim.userId);
    await mkdir(victimHome, { recursive: true });
    await writeFile(join(victimHome, 'notes.txt'), 'hello\n');
  }, 60_000);
  afterAll(async () => {
    await runner?.stop();
  });

  const exec = (actor: typeof attacker, name: string, args: Record<string, unknown>) =>
    client.call(
      'tools.exec',
      { actor, session_id: randomUUID(), tool_call_id: randomUUID(), name, arguments: args },
      { timeoutMs: 30_000 },
    );

  const HOSTILE: Array<Record<string, unknown>> = [
    { pattern: 'a', glob: `${'**/'.repeat(50)}x.txt` },
    { pattern: 'a', glob: `${'a*'.repeat(30)}b` },
    { pattern: 'a', glob: `**/${'a*'.repeat(30)}b/**` },
    { pattern: 'a', glob: `${'{a,aa}'.repeat(30)}b` },
    { pattern: '(a+)+$', case_sensitive: true },
    { pattern: '(a|aa)+$', case_sensitive: true },
    { pattern: '(.*a){20}$', case_sensitive: true },
    { pattern: '(a*)*b', output_mode: 'count' },
    { pattern: '^(a?){30}a{30}$' },
    { pattern: '(\\w+\\s?)+$', glob: '**/*.txt' },
  ];

  it('answers every hostile pattern within 2 s while another user reads within 200 ms', async () => {
    // The victim's reads, back to back, for as long as the attack runs.
    const readTimes: number[] = [];
    let attacking = true;
    const reads = (async () => {
      while (attacking) {
        const t0 = performance.now();
        const r = await exec(victim, 'read_file', { path: 'notes.txt' });
        readTimes.push(performance.now() - t0);
        expect(r).toEqual({ status: 'done', result: '     1\thello', result_type: 'text' });
        await new Promise((res) => setTimeout(res, 20));
      }
    })();

    const answers: Array<{ args: Record<string, unknown>; ms: number; reply: unknown }> = [];
    try {
      await new Promise((res) => setTimeout(res, 100));
      // Sequential and then all at once: the concurrent burst is what a flood looks like.
      for (const args of HOSTILE) {
        const t0 = performance.now();
        const reply = await exec(attacker, 'grep_files', args);
        answers.push({ args, ms: performance.now() - t0, reply });
      }
      const t0 = performance.now();
      const burst = await Promise.all(HOSTILE.map((args) => exec(attacker, 'grep_files', args)));
      burst.forEach((reply, i) => answers.push({ args: HOSTILE[i], ms: performance.now() - t0, reply }));
    } finally {
      attacking = false;
      await reads;
    }

    const slowCalls = answers.filter((a) => a.ms > 2000);
    console.log(
      `hostile grep_files: ${answers.length} calls, slowest ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms; ` +
        `victim read_file: ${readTimes.length} reads, slowest ${Math.round(Math.max(...readTimes))} ms; ` +
        `failed: ${JSON.stringify(answers.flatMap((a) => ((a.reply as { error?: string }).error ?? []) as string[]))}`,
    );
    const slowReads = readTimes.filter((ms) => ms > 200);
    recordAttackSuite('patterns', 'grep-over-nats', {
      patterns: answers.length,
      over_bound: slowCalls.length + slowReads.length,
    });
    expect(slowCalls.map((a) => ({ args: a.args, ms: Math.round(a.ms) }))).toEqual([]);
    expect(slowReads).toEqual([]);
    expect(readTimes.length).toBeGreaterThan(5);
    for (const { reply } of answers) {
      // A result, or an error that names what went wrong: never a crash or a silent nothing.
      const r = reply as { status: string; result?: string; error?: string };
      expect(['done', 'failed']).toContain(r.status);
      if (r.status === 'failed') expect(r.error).toMatch(/^grep_files: /);
    }
  }, 60_000);

  it('finds what a plain search should find (the engine still answers correctly)', async () => {
    const r = await exec(attacker, 'grep_files', {
      pattern: 'a{1000}!$',
      glob: `${'**/'.repeat(50)}*.txt`,
      output_mode: 'count',
      case_sensitive: true,
    });
    expect(r).toMatchObject({ status: 'done' });
    const lines = (r as { result: string }).result.split('\n');
    expect(lines).toHaveLength(30);
    expect(lines.every((l) => l.endsWith(': 20'))).toBe(true);
  });

  it('rejects syntax RE2 does not accept with an error naming it', async () => {
    expect(await exec(attacker, 'grep_files', { pattern: '(a)\\1' })).toEqual({
      status: 'failed',
      error: expect.stringMatching(
        /^grep_files: unsupported or invalid regular expression .*\\1.*RE2 syntax/,
      ) as unknown,
    });
    expect(await exec(attacker, 'grep_files', { pattern: '(?<=a)b' })).toEqual({
      status: 'failed',
      error: expect.stringMatching(/^grep_files: unsupported or invalid regular expression/) as unknown,
    });
  });
});
