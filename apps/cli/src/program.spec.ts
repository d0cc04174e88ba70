import { describe, expect, it } from '@jest/globals';
import { CommanderError } from 'commander';
import { EXIT, type ExitCode } from './errors.ts';
import { buildProgram, usageExit, type Actions } from './program.ts';

/** Parses a command line against actions that record what they were called with. */
async function parse(argv: string[]): Promise<{ calls: Array<[string, unknown[]]>; code: ExitCode; err: string }> {
  const calls: Array<[string, unknown[]]> = [];
  const actions = new Proxy({} as Actions, {
    get:
      (_, name: string) =>
      async (...args: unknown[]) => {
        calls.push([name, args]);
        return name === 'run' || name === 'chat' ? EXIT.ok : undefined;
      },
  });
  let code: ExitCode = EXIT.ok;
  let err = '';
  const program = buildProgram(actions, (c) => (code = c), { out: () => undefined, err: (s) => (err += s) });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    code = usageExit(e);
  }
  return { calls, code, err };
}

describe('skald command line', () => {
  it('run: the prompt, --json, --no-wait, --session, --timeout', async () => {
    const { calls } = await parse(['run', 'hello there', '--json', '--no-wait', '--session', 'abc', '--timeout', '30']);
    expect(calls).toEqual([['run', ['hello there', { json: true, wait: false, session: 'abc', timeout: 30 }]]]);
    expect((await parse(['run', '-'])).calls).toEqual([['run', ['-', { wait: true }]]]);
  });

  it('chat: --session, --continue, --agent', async () => {
    expect((await parse(['chat', '--session', 's1'])).calls).toEqual([['chat', [{ session: 's1' }]]]);
    expect((await parse(['chat', '-c'])).calls).toEqual([['chat', [{ continue: true }]]]);
    expect((await parse(['chat', '--agent', 'researcher'])).calls).toEqual([['chat', [{ agent: 'researcher' }]]]);
  });

  it('each REST surface lists by default and takes its actions', async () => {
    for (const [argv, call] of [
      [['sessions'], ['sessionsList', [{}]]],
      [
        ['sessions', '--json', '--search', 'plan'],
        ['sessionsList', [{ json: true, search: 'plan' }]],
      ],
      [
        ['sessions', 'rename', 'id1', 'New title'],
        ['sessionsRename', ['id1', 'New title', {}]],
      ],
      [
        ['sessions', 'delete', 'id1', '--json'],
        ['sessionsDelete', ['id1', { json: true }]],
      ],
      [['inbox'], ['inboxList', [{}]]],
      [
        ['inbox', 'approve', 'r1', '--for-session'],
        ['inboxApprove', ['r1', { forSession: true }]],
      ],
      [
        ['inbox', 'reject', 'r1', '--note', 'not now'],
        ['inboxReject', ['r1', { note: 'not now' }]],
      ],
      [
        ['inbox', 'answer', 'r1', 'blue'],
        ['inboxAnswer', ['r1', 'blue', {}]],
      ],
      [
        ['cron', 'list', '--json'],
        ['cronList', [{ json: true }]],
      ],
      [
        ['cron', 'add', '--cron', '0 9 * * 1-5', '--prompt', 'standup notes'],
        ['cronAdd', [{ cron: '0 9 * * 1-5', prompt: 'standup notes' }]],
      ],
      [
        ['cron', 'pause', 'j1'],
        ['cronSetEnabled', ['j1', false, {}]],
      ],
      [
        ['cron', 'resume', 'j1'],
        ['cronSetEnabled', ['j1', true, {}]],
      ],
      [
        ['cron', 'remove', 'j1'],
        ['cronRemove', ['j1', {}]],
      ],
      [['mcp'], ['mcpList', [{}]]],
      [
        ['mcp', 'add', 'fs', '--env', 'A=1', '--', 'npx', '-y', 'server', '/data'],
        ['mcpAdd', ['fs', { env: ['A=1'], command: ['npx', '-y', 'server', '/data'] }]],
      ],
      [
        ['mcp', 'add', 'web', '--url', 'https://mcp.example.com'],
        ['mcpAdd', ['web', { url: 'https://mcp.example.com', command: [] }]],
      ],
      [
        ['mcp', 'remove', 'fs'],
        ['mcpRemove', ['fs', {}]],
      ],
      [['tokens'], ['tokensList', [{}]]],
      [
        ['tokens', 'create', 'ci'],
        ['tokensCreate', ['ci', {}]],
      ],
      [
        ['tokens', 'revoke', 't1'],
        ['tokensRevoke', ['t1', {}]],
      ],
      [
        ['login', '--url', 'https://x.example.com', '--token-stdin'],
        ['login', [{ url: 'https://x.example.com', tokenStdin: true }]],
      ],
    ] as Array<[string[], [string, unknown[]]]>) {
      expect({ argv, calls: (await parse(argv)).calls }).toEqual({ argv, calls: [call] });
    }
  });

  it('a wrong command line is exit code 2 with a message naming the problem, and runs nothing', async () => {
    for (const [argv, says] of [
      [['run'], "missing required argument 'prompt'"],
      [['run', 'x', '--timeout', 'soon'], 'expected whole seconds'],
      [['sessions', '--page', '0'], 'expected a whole number'],
      [['frobnicate'], "unknown command 'frobnicate'"],
      [['chat', '--sesion', 'x'], "unknown option '--sesion'"],
      [['cron', 'add', '--cron', '* * * * *'], "required option '--prompt <text>' not specified"],
    ] as Array<[string[], string]>) {
      const r = await parse(argv);
      expect({ argv, code: r.code, calls: r.calls }).toEqual({ argv, code: EXIT.usage, calls: [] });
      expect(r.err).toContain(says);
    }
  });

  it('the exit code a command answers is the process exit code', async () => {
    const calls: string[] = [];
    let code: ExitCode = EXIT.ok;
    const actions = { run: async () => (calls.push('run'), EXIT.needsHuman) } as unknown as Actions;
    await buildProgram(actions, (c) => (code = c), { out: () => undefined, err: () => undefined }).parseAsync(
      ['run', 'x', '--no-wait'],
      { from: 'user' },
    );
    expect(code).toBe(EXIT.needsHuman);
    expect(calls).toEqual(['run']);
  });

  it('--help and --version exit 0', async () => {
    expect((await parse(['--help'])).code).toBe(EXIT.ok);
    expect((await parse(['--version'])).code).toBe(EXIT.ok);
  });
});
