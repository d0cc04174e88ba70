import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EXIT, type ExitCode } from './errors.ts';

/** What each command does: the real ones in main.ts, fakes in the argument-parsing tests. */
export interface Actions {
  login(o: {
    url?: string;
    email?: string;
    passwordStdin?: boolean;
    token?: boolean;
    tokenStdin?: boolean;
  }): Promise<void>;
  logout(): Promise<void>;
  whoami(o: { json?: boolean }): Promise<void>;
  chat(o: { session?: string; agent?: string; continue?: boolean }): Promise<ExitCode>;
  run(
    prompt: string,
    o: { json?: boolean; wait: boolean; session?: string; agent?: string; timeout?: number },
  ): Promise<ExitCode>;
  sessionsList(o: { json?: boolean; source?: string; search?: string; page?: number; perPage?: number }): Promise<void>;
  sessionsShow(id: string, o: { json?: boolean }): Promise<void>;
  sessionsRename(id: string, title: string, o: { json?: boolean }): Promise<void>;
  sessionsDelete(id: string, o: { json?: boolean }): Promise<void>;
  inboxList(o: { json?: boolean }): Promise<void>;
  inboxApprove(id: string, o: { json?: boolean; forSession?: boolean; note?: string }): Promise<void>;
  inboxReject(id: string, o: { json?: boolean; note?: string }): Promise<void>;
  inboxAnswer(id: string, answer: string, o: { json?: boolean }): Promise<void>;
  cronList(o: { json?: boolean }): Promise<void>;
  cronAdd(o: {
    json?: boolean;
    cron: string;
    prompt: string;
    title?: string;
    agent?: string;
    timezone?: string;
    paused?: boolean;
  }): Promise<void>;
  cronRemove(id: string, o: { json?: boolean }): Promise<void>;
  cronSetEnabled(id: string, enabled: boolean, o: { json?: boolean }): Promise<void>;
  mcpList(o: { json?: boolean }): Promise<void>;
  mcpAdd(
    name: string,
    o: { json?: boolean; command?: string[]; url?: string; env?: string[]; header?: string[]; network?: boolean },
  ): Promise<void>;
  mcpRemove(name: string, o: { json?: boolean }): Promise<void>;
  tokensList(o: { json?: boolean }): Promise<void>;
  tokensCreate(name: string, o: { json?: boolean }): Promise<void>;
  tokensRevoke(id: string, o: { json?: boolean }): Promise<void>;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('expected a whole number ≥ 1');
  return n;
}

function seconds(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected whole seconds');
  return n;
}

const collect = (v: string, prev: string[] | undefined): string[] => [...(prev ?? []), v];

const EXIT_HELP = `
Exit codes:
  0    done (run: the turn ended with a final answer)
  1    an error (the server refused or could not be reached, the turn failed)
  2    a wrong command line
  3    run --no-wait: the turn waits for a human (approve in the web inbox or with skald inbox)
  4    not logged in, or the credential expired or was revoked: run skald login
  130  stopped with Ctrl-C

Environment:
  SKALD_URL, SKALD_TOKEN  the server and an API token, instead of what skald login stored
  XDG_CONFIG_HOME         where the credential is stored (default ~/.config; the file is skald/credentials.json)
`;

/**
 * The command line of `skald`. `setCode` receives the exit code a command answers; parse errors
 * throw a `CommanderError` whose `exitCode` is `EXIT.usage`.
 */
export function buildProgram(
  actions: Actions,
  setCode: (code: ExitCode) => void,
  io: { out: (s: string) => void; err: (s: string) => void },
): Command {
  const program = new Command('skald')
    .description('The terminal client of Skald: chat with your agents, run them from scripts, manage what they use.')
    .version('0.1.0')
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError('(skald --help lists the commands)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();
  const json = (c: Command) => c.option('--json', 'print the answer as JSON (for scripts)');

  program
    .command('login')
    .description('log in to a Skald server (email and password, or an API token) and store the credential')
    .option('--url <url>', 'the server, http(s)://host[:port] (default: SKALD_URL or asked)')
    .option('--email <email>', 'the account (default: asked)')
    .option('--password-stdin', 'read the password from stdin')
    .option('--token', 'log in with an API token (asked for)')
    .option('--token-stdin', 'log in with an API token read from stdin')
    .action((o: Parameters<Actions['login']>[0]) => actions.login(o));
  program
    .command('logout')
    .description('forget the stored credential')
    .action(() => actions.logout());
  json(program.command('whoami').description('the server and account the commands use')).action(
    (o: { json?: boolean }) => actions.whoami(o),
  );

  program
    .command('chat')
    .description('chat with an agent in this terminal (a new conversation unless --continue or --session)')
    .option('--session <id>', 'resume this conversation, with its history')
    .option('-c, --continue', 'continue the last conversation of skald chat')
    .option('--agent <id>', 'the agent of the new conversation')
    .action(async (o: Parameters<Actions['chat']>[0]) => setCode(await actions.chat(o)));

  json(
    program
      .command('run')
      .description('run one turn without a UI and print the final answer; "-" reads the prompt from stdin')
      .argument('<prompt>', 'what to ask, or - for stdin')
      .option('--session <id>', 'continue this conversation (default: a new one)')
      .option('--agent <id>', 'the agent of the new conversation')
      .option('--no-wait', 'exit with code 3 when the turn needs a human, instead of waiting')
      .addOption(
        new Option('--timeout <seconds>', 'stop the turn and fail after this long (0: no limit)').argParser(seconds),
      ),
  ).action(async (prompt: string, o: Parameters<Actions['run']>[1]) => setCode(await actions.run(prompt, o)));

  const sessions = program.command('sessions').description("your conversations (every client's)");
  json(
    sessions
      .command('list', { isDefault: true })
      .description('list conversations, newest first')
      .option('--source <source>', 'only those of one client (web, cli, …)')
      .option('--search <words>', 'full-text search of your messages')
      .addOption(new Option('--page <n>', 'page').argParser(positiveInt))
      .addOption(new Option('--per-page <n>', 'per page (≤ 100)').argParser(positiveInt)),
  ).action((o: Parameters<Actions['sessionsList']>[0]) => actions.sessionsList(o));
  json(sessions.command('show').description('print a conversation').argument('<id>')).action(
    (id: string, o: { json?: boolean }) => actions.sessionsShow(id, o),
  );
  json(sessions.command('rename').description('rename a conversation').argument('<id>').argument('<title>')).action(
    (id: string, title: string, o: { json?: boolean }) => actions.sessionsRename(id, title, o),
  );
  json(sessions.command('delete').description('delete a conversation and all it owns').argument('<id>')).action(
    (id: string, o: { json?: boolean }) => actions.sessionsDelete(id, o),
  );

  const inbox = program.command('inbox').description('approvals and questions that wait for you');
  json(inbox.command('list', { isDefault: true }).description('what waits for you')).action((o: { json?: boolean }) =>
    actions.inboxList(o),
  );
  json(
    inbox
      .command('approve')
      .description('approve a call')
      .argument('<request_id>')
      .option('--for-session', "also allow this call's narrow kind in its session (as listed)")
      .option('--note <text>', 'a note with the answer'),
  ).action((id: string, o: Parameters<Actions['inboxApprove']>[1]) => actions.inboxApprove(id, o));
  json(
    inbox
      .command('reject')
      .description('reject a call')
      .argument('<request_id>')
      .option('--note <text>', 'why (the agent reads it)'),
  ).action((id: string, o: Parameters<Actions['inboxReject']>[1]) => actions.inboxReject(id, o));
  json(
    inbox.command('answer').description("answer an agent's question").argument('<request_id>').argument('<answer>'),
  ).action((id: string, answer: string, o: { json?: boolean }) => actions.inboxAnswer(id, answer, o));

  const cron = program.command('cron').description('scheduled agent runs');
  json(cron.command('list', { isDefault: true }).description('your cron jobs')).action((o: { json?: boolean }) =>
    actions.cronList(o),
  );
  json(
    cron
      .command('add')
      .description('schedule a prompt')
      .requiredOption('--cron <expr>', 'five fields (or six with seconds first), e.g. "0 9 * * 1-5"')
      .requiredOption('--prompt <text>', 'what the agent is asked each time')
      .option('--title <text>', 'a title (default: the prompt)')
      .option('--agent <id>', 'the agent (default: main)')
      .option('--timezone <iana>', 'e.g. Europe/Berlin (default: UTC)')
      .option('--paused', 'add it paused'),
  ).action((o: Parameters<Actions['cronAdd']>[0]) => actions.cronAdd(o));
  json(cron.command('remove').description('delete a cron job').argument('<id>')).action(
    (id: string, o: { json?: boolean }) => actions.cronRemove(id, o),
  );
  json(cron.command('pause').description('stop a cron job from firing').argument('<id>')).action(
    (id: string, o: { json?: boolean }) => actions.cronSetEnabled(id, false, o),
  );
  json(cron.command('resume').description('let a paused cron job fire again').argument('<id>')).action(
    (id: string, o: { json?: boolean }) => actions.cronSetEnabled(id, true, o),
  );

  const mcp = program.command('mcp').description('your MCP servers');
  json(mcp.command('list', { isDefault: true }).description('your MCP servers and their status')).action(
    (o: { json?: boolean }) => actions.mcpList(o),
  );
  json(
    mcp
      .command('add')
      .description('add an MCP server: skald mcp add <name> -- <command> [args…], or --url <url>')
      .argument('<name>')
      .argument('[command...]', 'a stdio server: the command and its arguments (after --)')
      .option('--url <url>', 'a streamable HTTP server')
      .option('--env <NAME=value>', 'an environment variable of a stdio server (repeatable)', collect)
      .option('--header <NAME=value>', 'a header sent to an HTTP server (repeatable)', collect)
      .option('--network', 'let a stdio server use the network (if the operator allows it)'),
  ).action((name: string, command: string[], o: Parameters<Actions['mcpAdd']>[1]) =>
    actions.mcpAdd(name, { ...o, command }),
  );
  json(mcp.command('remove').description('remove an MCP server').argument('<name>')).action(
    (name: string, o: { json?: boolean }) => actions.mcpRemove(name, o),
  );

  const tokens = program.command('tokens').description('API tokens (for scripts, SKALD_TOKEN and other clients)');
  json(tokens.command('list', { isDefault: true }).description('your API tokens')).action((o: { json?: boolean }) =>
    actions.tokensList(o),
  );
  json(tokens.command('create').description('create a token (printed once, to stdout)').argument('<name>')).action(
    (name: string, o: { json?: boolean }) => actions.tokensCreate(name, o),
  );
  json(tokens.command('revoke').description('revoke a token').argument('<id>')).action(
    (id: string, o: { json?: boolean }) => actions.tokensRevoke(id, o),
  );

  // Every sub-command reports its errors the same way (exit code 2, through the caller).
  for (const c of [program, ...allCommands(program)])
    c.exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
  return program;
}

function allCommands(c: Command): Command[] {
  return c.commands.flatMap((sub) => [sub, ...allCommands(sub)]);
}

/** The exit code of a parse error (`--help` and `--version` are not errors). */
export function usageExit(e: CommanderError): ExitCode {
  if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help')
    return EXIT.ok;
  return EXIT.usage;
}
