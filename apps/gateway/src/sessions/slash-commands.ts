import { Actor, WORKER_COMMANDS } from '@skald/contracts';

export const HELP_TEXT = [
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
].join('\n');

type WorkerCommand = (typeof WORKER_COMMANDS)[number];

const isWorkerCommand = (c: string): c is WorkerCommand => (WORKER_COMMANDS as readonly string[]).includes(c);

/** What the commands need of the sessions gateway (which implements it and calls `handleSlashCommand`). */
export interface SlashCommandSessions {
  workerCommand(
    actor: Actor,
    source: string,
    command: WorkerCommand,
    args: string,
  ): Promise<{ command: string; content: string }>;
  cancelActive(actor: Actor, source: string): Promise<{ cancelled: boolean }>;
  newSession(actor: Actor, source: string): Promise<string>;
  llmCommand(actor: Actor, source: string, command: '/models' | '/model' | '/cost', args: string): Promise<string>;
}

/**
 * Slash commands are answered with `command_result` and never reach the LLM. The gateway answers
 * /stop, /new and /help; the commands on a session's state go to the session worker, which owns it.
 * An unknown command gets the help text.
 */
export async function handleSlashCommand(
  sessions: SlashCommandSessions,
  actor: Actor,
  source: string,
  content: string,
): Promise<{ command_result: { command: string; content: string }; session_id?: string }> {
  const [word, ...rest] = content.trim().split(/\s+/);
  const command = word?.toLowerCase() ?? '/help';
  if (isWorkerCommand(command)) {
    return { command_result: await sessions.workerCommand(actor, source, command, rest.join(' ')) };
  }
  switch (command) {
    case '/stop': {
      const r = await sessions.cancelActive(actor, source);
      return { command_result: { command, content: r.cancelled ? 'Stopped.' : 'Nothing is running.' } };
    }
    case '/new': {
      const id = await sessions.newSession(actor, source);
      return { command_result: { command, content: 'Started a new conversation.' }, session_id: id };
    }
    case '/models':
    case '/model':
    case '/cost': {
      const args = content.trim().slice(command.length).trim();
      return { command_result: { command, content: await sessions.llmCommand(actor, source, command, args) } };
    }
    default:
      return {
        command_result: {
          command,
          content: command === '/help' ? HELP_TEXT : `Unknown command ${command}.\n\n${HELP_TEXT}`,
        },
      };
  }
}
