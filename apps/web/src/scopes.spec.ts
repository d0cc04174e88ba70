import { describe, expect, it } from '@jest/globals';
import { describeScope } from './scopes';

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
