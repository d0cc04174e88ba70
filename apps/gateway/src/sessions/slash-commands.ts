import { Actor } from '@skald/contracts';
import type { SessionsGateway } from './sessions.gateway';

export const HELP_TEXT = [
  'Commands:',
  '  /stop     stop the running turn',
  '  /new      start a new conversation',
  '  /help     this list',
  '  /models   the models, their health, and which one is pinned here',
  '  /model    /model <number|name|auto>: pin a model for this conversation source (auto clears)',
  "  /cost     tokens and cost of this conversation, and today's budget",
  'More commands (/compact, /context, /clear, /resettools, /sethome) arrive with the agents work.',
].join('\n');

/**
 * Slash commands are answered with `command_result` and never reach the LLM. This is the minimal
 * set the skeleton needs (/stop, /new, /help); issue 7 moves the full set into the session worker.
 */
export async function handleSlashCommand(
  sessions: SessionsGateway,
  actor: Actor,
  source: string,
  content: string,
): Promise<{ command_result: { command: string; content: string }; session_id?: string }> {
  const command = content.trim().split(/\s+/)[0]?.toLowerCase() ?? '/help';
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
