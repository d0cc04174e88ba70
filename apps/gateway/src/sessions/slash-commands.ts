import { Actor, WORKER_COMMANDS } from '@skald/contracts';
import type { SessionsGateway } from './sessions.gateway';

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

const isWorkerCommand = (c: string): c is (typeof WORKER_COMMANDS)[number] =>
  (WORKER_COMMANDS as readonly string[]).includes(c);

/**
 * Slash commands are answered with `command_result` and never reach the LLM. The gateway answers
 * /stop, /new and /help; the commands on a session's state go to the session worker, which owns it.
 * An unknown command gets the help text.
 */
export async function handleSlashCommand(
  sessions: SessionsGateway,
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
