import { SLASH_COMMANDS, WORKER_COMMANDS, type SlashCommand } from '@skald/contracts';
import type { SessionsGateway } from './sessions.gateway';
import { HELP_TEXT, handleSlashCommand } from './slash-commands';

const actor = { userId: '00000000-0000-4000-8000-000000000001', role: 'user' as const };

/** A gateway that records which of its doors a command went through. */
function sessions() {
  const calls: string[] = [];
  const gateway = {
    workerCommand: (_a: unknown, _s: string, command: string, args: string) => {
      calls.push(`worker ${command} ${args}`);
      return Promise.resolve({ command, content: 'from the worker' });
    },
    llmCommand: (_a: unknown, _s: string, command: string, args: string) => {
      calls.push(`llm ${command} ${args}`);
      return Promise.resolve('from the models');
    },
    cancelActive: () => {
      calls.push('cancel');
      return Promise.resolve({ cancelled: true });
    },
    newSession: () => {
      calls.push('new');
      return Promise.resolve('s2');
    },
  };
  return { calls, gateway: gateway as unknown as SessionsGateway };
}

describe('slash commands: one table (SLASH_COMMANDS) routes and documents them', () => {
  it('the help lists every command of the table, in its order, with its usage', () => {
    expect(HELP_TEXT).toBe(
      [
        'Commands:',
        '  /stop        stop the running turn',
        '  /new         start a new conversation (new session)',
        '  /clear       clear this conversation: the agent and the chat start empty (scratchpad and tools kept)',
        '  /compact     fold the older messages into the conversation summary now',
        '  /context     what the context sent to the model holds, with token estimates',
        '  /resettools  deactivate the tool groups the agent activated (activate_tools)',
        '  /sethome     send notifications to this source',
        '  /models      the models, their health, and which one is pinned here',
        '  /model N     pin a model for this source by number or name (/model auto: automatic choice)',
        "  /cost        tokens and cost of this conversation, and today's budget",
        '  /help        this list',
      ].join('\n'),
    );
  });

  it('the worker answers exactly the commands the table gives it', () => {
    expect([...WORKER_COMMANDS].sort()).toEqual(['/clear', '/compact', '/context', '/resettools', '/sethome']);
  });

  it.each(Object.keys(SLASH_COMMANDS) as SlashCommand[])('%s goes to its answerer', async (command) => {
    const { calls, gateway } = sessions();
    const r = await handleSlashCommand(gateway, actor, 'web', `${command.toUpperCase()} a b`);
    expect(r.command_result.command).toBe(command);
    const door = calls[0]?.split(' ')[0];
    switch (SLASH_COMMANDS[command].answeredBy) {
      case 'session-worker':
        expect(calls).toEqual([`worker ${command} a b`]);
        break;
      case 'llm':
        expect(calls).toEqual([`llm ${command} a b`]);
        break;
      case 'gateway':
        expect(door === 'worker' || door === 'llm').toBe(false);
        if (command === '/help') expect(r.command_result.content).toBe(HELP_TEXT);
        break;
    }
  });

  it('an unknown command gets the help, and nothing is called', async () => {
    const { calls, gateway } = sessions();
    const r = await handleSlashCommand(gateway, actor, 'web', '/nope');
    expect(r.command_result).toEqual({ command: '/nope', content: `Unknown command /nope.\n\n${HELP_TEXT}` });
    expect(calls).toEqual([]);
  });
});
