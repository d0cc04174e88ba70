import { describe, expect, it } from '@jest/globals';
import { describeDecision, describeScope } from './scopes';

describe('a session approval scope in words (card, inbox, bypass list)', () => {
  it('a command scope names the command and its option shape in a sentence a user reads', () => {
    expect(describeScope({ tool: 'execute_cmd', program: 'git', subcommand: 'status', options: ['--short'] })).toBe(
      'the command git status with any arguments, using only the option --short',
    );
    expect(describeScope({ tool: 'execute_cmd', program: 'git', subcommand: 'status', options: [] })).toBe(
      'the command git status with any arguments and no options',
    );
    expect(describeScope({ tool: 'execute_cmd', program: 'ls', subcommand: null, options: ['-l', '-a'] })).toBe(
      'the command ls without arguments, using only the options -l, -a',
    );
    expect(describeScope({ tool: 'execute_cmd', program: 'ls', subcommand: null })).toBe(
      'the command ls without arguments or options',
    );
  });

  it('other scopes are unchanged', () => {
    expect(describeScope('all')).toBe('every tool');
    expect(describeScope({ tool: 'write_file', directory: '/workspace/notes' })).toBe(
      'write_file on files directly in /workspace/notes',
    );
  });
});

describe('how an approval was answered, in words (the settled card, live and after a reload)', () => {
  const ME = '00000000-0000-4000-8000-0000000000aa';
  const at = '2026-12-07T06:00:00.000Z';
  it('names who (you or an admin), where, and the session approval it opened', () => {
    expect(describeDecision({ by_user_id: ME, at, channel: 'card' }, ME)).toBe('by you in the chat');
    expect(describeDecision({ by_user_id: '00000000-0000-4000-8000-0000000000bb', at, channel: 'inbox' }, ME)).toBe(
      'by an admin in the inbox',
    );
    expect(describeDecision({ by_user_id: ME, at, channel: 'cli', bypass: { scope: 'call', secs: 3600 } }, ME)).toBe(
      'by you in the CLI, and for this session calls like this one for 1 h',
    );
    expect(describeDecision({ by_user_id: ME, at, bypass: { scope: { category: 'fs_read' } } }, ME)).toBe(
      'by you, and for this session every fs_read tool',
    );
    expect(describeDecision({ by_user_id: ME, at, channel: 'push', edited: true }, ME)).toBe(
      'by you from a notification, with the call edited',
    );
  });

  it("names the conversation's owner when an admin reads it; another answerer is still an admin", () => {
    const OWNER = '00000000-0000-4000-8000-0000000000cc';
    const named = new Map([[OWNER, 'ann@example.com']]);
    expect(describeDecision({ by_user_id: OWNER, at, channel: 'card' }, ME, named)).toBe(
      'by ann@example.com in the chat',
    );
    expect(describeDecision({ by_user_id: ME, at, channel: 'api' }, ME, named)).toBe('by you through the API');
    expect(describeDecision({ by_user_id: '00000000-0000-4000-8000-0000000000dd', at }, ME, named)).toBe('by an admin');
  });
});
