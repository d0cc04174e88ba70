import type { SkaldClient } from '@skald/client';
import { CliError, EXIT } from './errors.ts';
import { api, type Runtime } from './runtime.ts';

/** The client surface `skald chat` talks as: its conversations are listed with this source. */
export const CHAT_SOURCE = 'cli';
/** The agent of a new conversation when `--agent` names none. */
export const DEFAULT_AGENT = 'main';

/**
 * A source of its own for each `skald run`: a run's conversation is the only one of its source, so
 * runs side by side (or a run and an open `skald chat`) never move each other's conversation, and a
 * run that waits for a human stays waiting when the next one starts.
 */
export function runSource(): string {
  return `run-${crypto.randomUUID().slice(0, 8)}`;
}

export interface OpenOptions {
  /** A conversation of the user's to reopen (any source). */
  session?: string;
  /** The agent of a new conversation. */
  agent?: string;
  /** Start a new conversation (unless the source's active one is still empty). */
  fresh: boolean;
  source?: string;
}

/**
 * The conversation a command talks to, made the active session of its source: the one named
 * (reopened where it was started), a new one, or the source's active one. Answers the source the
 * chat socket connects as.
 */
export async function openConversation(
  _rt: Runtime,
  client: SkaldClient,
  o: OpenOptions,
): Promise<{ source: string; sessionId: string; title: string | null }> {
  const source = o.source ?? CHAT_SOURCE;
  if (o.session) {
    if (o.agent) throw new CliError('--agent picks the agent of a new conversation: leave out --session', EXIT.usage);
    const r = await api(client, 'activateSession', {
      params: { id: o.session },
    });
    return { source: r.source, sessionId: r.session_id, title: null };
  }
  const page = await client.messages(source, { limit: 1 });
  if (page.session_id && !(o.fresh && page.items.length > 0) && !o.agent)
    return { source, sessionId: page.session_id, title: null };
  // A new conversation is opened beside the active one, which stays as it is (a running or waiting
  // turn in it goes on), and then becomes the active one of the source.
  const r = await api(client, 'createSession', { query: { source, agent_id: o.agent ?? DEFAULT_AGENT } });
  return { source, sessionId: r.session_id, title: null };
}
