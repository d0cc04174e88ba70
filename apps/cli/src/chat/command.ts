import { render } from 'ink';
import { createElement as h } from 'react';
import { EXIT, type ExitCode } from '../errors.ts';
import { openConversation } from '../conversation.ts';
import type { Runtime } from '../runtime.ts';
import { signedIn } from '../runtime.ts';
import { ChatApp } from './app.ts';
import { initialState, withHistory } from './state.ts';

/** Messages of the history page shown when a conversation opens. */
const HISTORY_PAGE = 50;

export interface ChatOptions {
  session?: string;
  agent?: string;
  continue?: boolean;
}

/** `skald chat`: the interactive client. Resolves with the exit code once the user leaves. */
export async function chat(rt: Runtime, o: ChatOptions): Promise<ExitCode> {
  const { client, credential } = await signedIn(rt);
  const { source, sessionId, title } = await openConversation(rt, client, {
    session: o.session,
    agent: o.agent,
    fresh: !o.continue && !o.session,
  });
  const page = await client.messages(source, { limit: HISTORY_PAGE });
  let initial = withHistory(initialState(), page);
  initial = { ...initial, sessionId: page.session_id ?? sessionId };
  // The socket replays what follows the page shown (read before it, so nothing falls in between).
  const conn = client.connect({
    source,
    auth: 'header',
    startAt: (id) => Promise.resolve(id === page.session_id ? (page.resume_seq ?? null) : null),
  });
  const banner = [
    [
      { text: 'skald', bold: true, color: 'cyan' as const },
      { text: ` · ${credential.url}${credential.email ? ` · ${credential.email}` : ''}`, dim: true },
    ],
    [
      {
        text: `${o.session ? 'resumed' : 'conversation'} ${page.session_id ?? sessionId}${title ? ` · ${title}` : ''}${page.has_more ? ` · older messages: skald sessions show ${page.session_id ?? sessionId}` : ''}`,
        dim: true,
      },
    ],
    [{ text: ' ' }],
  ];
  let runningAtExit = false;
  const app = render(
    h(ChatApp, {
      client,
      conn,
      initial,
      banner,
      onExit: (running) => {
        runningAtExit = running;
      },
    }),
    { exitOnCtrlC: false },
  );
  try {
    await app.waitUntilExit();
  } finally {
    conn.stop();
  }
  return runningAtExit ? EXIT.interrupted : EXIT.ok;
}
