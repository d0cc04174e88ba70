import type { TurnEvent } from '@skald/client';
import { openConversation, runSource } from './conversation.ts';
import { CliError, EXIT, type ExitCode } from './errors.ts';
import { signedIn, type Runtime } from './runtime.ts';

/** The largest prompt read from stdin (the server's own limit for a message). */
export const MAX_PROMPT_BYTES = 512 * 1024;

export interface RunOptions {
  json?: boolean;
  /** false (`--no-wait`): exit with `EXIT.needsHuman` as soon as the turn waits for a human. */
  wait: boolean;
  session?: string;
  agent?: string;
  /** Give up (stopping the turn) after this many seconds; 0 or absent: no limit. */
  timeout?: number;
}

/** What a request for a human asks, in one line. */
export function humanRequest(e: TurnEvent): { requestId: string; what: string } | null {
  if (e.type === 'pending_write')
    return {
      requestId: e.request_id,
      what: e.kind === 'command' ? `run ${e.new_content}` : `write ${e.path ?? 'a file'}`,
    };
  if (e.type === 'approval_required') return { requestId: e.request_id, what: `call ${e.tool_name}` };
  if (e.type === 'agent_question') return { requestId: e.request_id, what: `answer "${e.question}"` };
  return null;
}

/**
 * `skald run`: one turn without a terminal UI. Prints the final answer (or with `--json` each event
 * of the turn as one JSON line) and answers the exit code: 0 final, 1 error, 3 waits for a human
 * (`--no-wait`). It never answers a request for a human: it says where to, and waits.
 */
export async function run(rt: Runtime, promptArg: string, o: RunOptions): Promise<ExitCode> {
  const prompt = promptArg === '-' ? await rt.readStdin(MAX_PROMPT_BYTES) : promptArg;
  if (!prompt.trim()) throw new CliError('the prompt is empty', EXIT.usage);
  const { client, credential } = await signedIn(rt);
  const { source } = await openConversation(rt, client, {
    session: o.session,
    agent: o.agent,
    fresh: !o.session,
    source: runSource(),
  });
  // Where the turn's events start: what the conversation held before the message is sent. (Read
  // again after the socket opens, a fast turn could be over and its events taken as seen.)
  const before = await client.messages(source, { limit: 1 });
  const conn = client.connect({
    source,
    auth: 'header',
    reconnect: { maxTries: 10 },
    startAt: (id) => Promise.resolve(id === before.session_id ? (before.resume_seq ?? null) : null),
  });
  let timer: ReturnType<typeof setTimeout> | null = null;
  let timedOut = false;
  const interrupted = { yes: false };
  const onSigint = () => {
    interrupted.yes = true;
    conn.cancel();
  };
  process.once('SIGINT', onSigint);
  try {
    await conn.ready();
    const turn = conn.message(prompt);
    if (o.timeout && o.timeout > 0)
      timer = setTimeout(() => {
        timedOut = true;
        conn.cancel();
      }, o.timeout * 1000);
    for await (const e of turn) {
      if (o.json) rt.out(`${JSON.stringify(e)}\n`);
      const asks = humanRequest(e);
      if (!asks) continue;
      rt.err(
        `skald: the agent asks to ${asks.what}: answer in the web inbox ${credential.url}/#inbox or with ` +
          `skald inbox ${e.type === 'agent_question' ? 'answer' : 'approve|reject'} ${asks.requestId}` +
          `${o.wait ? ' (waiting)' : ''}\n`,
      );
      if (!o.wait) return EXIT.needsHuman;
    }
    const end = await turn.end;
    if (end.kind === 'done') {
      if (!o.json) rt.out(end.frame.content.endsWith('\n') ? end.frame.content : `${end.frame.content}\n`);
      return EXIT.ok;
    }
    if (interrupted.yes) return EXIT.interrupted;
    if (timedOut) throw new CliError(`no final answer within ${o.timeout} s: the turn was stopped`);
    if (end.kind === 'error') throw new CliError(`the turn failed: ${end.frame.message} (${end.frame.code})`);
    if (end.kind === 'discarded') throw new CliError('the message was discarded before it entered the conversation');
    if (end.kind === 'refused')
      throw new CliError(`the server refused the message: ${end.frame.message} (${end.frame.code})`);
    throw new CliError(end.frame.content);
  } finally {
    if (timer) clearTimeout(timer);
    process.removeListener('SIGINT', onSigint);
    conn.stop();
  }
}
