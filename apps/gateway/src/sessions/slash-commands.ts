import {
  Actor,
  isAnsweredBy,
  isSlashCommand,
  SLASH_HELP_TEXT,
  type SlashCommandOf,
  type WorkerCommand,
} from '@skald/contracts';

export const HELP_TEXT = SLASH_HELP_TEXT;

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
  llmCommand(actor: Actor, source: string, command: SlashCommandOf<'llm'>, args: string): Promise<string>;
}

/**
 * Slash commands (`SLASH_COMMANDS`) are answered with `command_result` and never reach the LLM.
 * The gateway answers its own; the commands on a session's state go to the session worker, which
 * owns it; the model commands to the model registry. An unknown command gets the help text.
 */
export async function handleSlashCommand(
  sessions: SlashCommandSessions,
  actor: Actor,
  source: string,
  content: string,
): Promise<{ command_result: { command: string; content: string }; session_id?: string }> {
  const [word, ...rest] = content.trim().split(/\s+/);
  const command = word?.toLowerCase() ?? '/help';
  if (!isSlashCommand(command))
    return { command_result: { command, content: `Unknown command ${command}.\n\n${HELP_TEXT}` } };
  if (isAnsweredBy('session-worker', command))
    return { command_result: await sessions.workerCommand(actor, source, command, rest.join(' ')) };
  if (isAnsweredBy('llm', command)) {
    const args = content.trim().slice(command.length).trim();
    return { command_result: { command, content: await sessions.llmCommand(actor, source, command, args) } };
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
    case '/help':
      return { command_result: { command, content: HELP_TEXT } };
  }
}
