import { ROUTES, type SessionList, type SessionSearchList } from '@skald/contracts';
import { CliError, EXIT } from './errors.ts';
import { api, signedIn, type Runtime } from './runtime.ts';
import { table, when } from './table.ts';
import { describeScope } from './chat/format.ts';

/** What every listing and action takes: `--json` prints the server's answer as one JSON document. */
export interface Output {
  json?: boolean;
}

function print(rt: Runtime, o: Output, value: unknown, human: () => string): void {
  rt.out(o.json ? `${JSON.stringify(value ?? null)}\n` : human());
}

// --- sessions ---------------------------------------------------------------------------------

export async function sessionsList(
  rt: Runtime,
  o: Output & { source?: string; search?: string; page?: number; perPage?: number },
): Promise<void> {
  const { client } = await signedIn(rt);
  const query = { source: o.source, q: o.search, page: o.page, per_page: o.perPage };
  const r = await api(client, 'listSessions', { query });
  print(rt, o, r, () => {
    if (o.search) {
      const hits = (r as SessionSearchList).items;
      return table(
        hits,
        [
          { heading: 'id', cell: (s) => s.id },
          { heading: 'source', cell: (s) => s.source },
          { heading: 'title', cell: (s) => s.title, max: 40 },
          { heading: 'match', cell: (s) => s.snippet, max: 60 },
        ],
        'no conversation matches',
      );
    }
    const list = r as SessionList;
    const more =
      list.total > list.page * list.per_page ? `(${list.total} in all; --page ${list.page + 1} for more)\n` : '';
    return (
      table(
        list.items,
        [
          { heading: 'id', cell: (s) => s.id },
          { heading: 'source', cell: (s) => s.source },
          { heading: 'agent', cell: (s) => s.agent_id },
          { heading: 'msgs', cell: (s) => s.message_count },
          { heading: 'last message', cell: (s) => when(s.last_message_at) },
          { heading: 'title', cell: (s) => `${s.is_active ? '* ' : ''}${s.title ?? ''}`, max: 48 },
        ],
        'no conversations yet: start one with skald chat',
      ) + more
    );
  });
}

export async function sessionsShow(rt: Runtime, id: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  if (o.json) {
    const r = await api(client, 'getSession', { params: { id } });
    return print(rt, o, r, () => '');
  }
  // What the chat shows, oldest first: the conversation's Markdown export.
  const res = await client.rest.fetch(
    { method: 'GET', path: ROUTES.exportSession.path },
    { params: { id }, query: { format: 'markdown' } },
  );
  const text = await res.text();
  rt.out(text.endsWith('\n') ? text : `${text}\n`);
}

export async function sessionsRename(rt: Runtime, id: string, title: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'renameSession', { params: { id }, body: { title } });
  print(rt, o, r, () => `renamed ${r.id}: ${r.title}\n`);
}

export async function sessionsDelete(rt: Runtime, id: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  await api(client, 'deleteSession', { params: { id } });
  print(rt, o, { id, deleted: true }, () => `deleted ${id}\n`);
}

// --- inbox ------------------------------------------------------------------------------------

function argsLine(args: unknown): string {
  if (typeof args === 'string') return args;
  if (typeof args === 'object' && args !== null) {
    const a = args as Record<string, unknown>;
    if (typeof a.command === 'string') return `$ ${a.command}`;
    if (typeof a.path === 'string') return a.path;
  }
  return JSON.stringify(args);
}

export async function inboxList(rt: Runtime, o: Output): Promise<void> {
  const { client, credential } = await signedIn(rt);
  const r = await api(client, 'getInbox', {});
  print(rt, o, r, () => {
    const rows = [
      ...r.approvals.map((a) => ({
        id: a.request_id,
        kind: 'approval',
        session: a.session_id,
        what: `${a.tool_name} ${argsLine(a.arguments)}`,
        scope: a.session_approval ? a.session_approval.scopes.map(describeScope).join('; ') : '',
      })),
      ...r.clarifications.map((c) => ({
        id: c.request_id,
        kind: 'question',
        session: c.session_id,
        what: `${c.title}: ${c.question}`,
        scope: '',
      })),
    ];
    return (
      table(
        rows,
        [
          { heading: 'request', cell: (x) => x.id },
          { heading: 'kind', cell: (x) => x.kind },
          { heading: 'session', cell: (x) => x.session },
          { heading: 'asks', cell: (x) => x.what, max: 60 },
          { heading: 'for the session', cell: (x) => x.scope, max: 40 },
        ],
        'nothing waits for you',
      ) + (rows.length ? `also in the web inbox: ${credential.url}/#inbox\n` : '')
    );
  });
}

export async function inboxApprove(
  rt: Runtime,
  requestId: string,
  o: Output & { forSession?: boolean; note?: string },
): Promise<void> {
  const { client } = await signedIn(rt);
  const body = {
    action: 'approve' as const,
    ...(o.note ? { note: o.note } : {}),
    ...(o.forSession ? { bypass_scope: 'call' as const } : {}),
    channel: 'cli' as const,
  };
  const r = await api(client, 'resolveApproval', { params: { id: requestId }, body });
  print(rt, o, r, () => `approved ${requestId}${o.forSession ? ' (and its kind for this session)' : ''}\n`);
}

export async function inboxReject(rt: Runtime, requestId: string, o: Output & { note?: string }): Promise<void> {
  const { client } = await signedIn(rt);
  const body = { action: 'reject' as const, ...(o.note ? { note: o.note } : {}), channel: 'cli' as const };
  const r = await api(client, 'resolveApproval', { params: { id: requestId }, body });
  print(rt, o, r, () => `rejected ${requestId}\n`);
}

export async function inboxAnswer(rt: Runtime, requestId: string, answer: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'answerClarification', { params: { id: requestId }, body: { answer } });
  print(rt, o, r, () => `answered ${requestId}\n`);
}

// --- cron -------------------------------------------------------------------------------------

export async function cronList(rt: Runtime, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'listCronJobs', {});
  print(rt, o, r, () =>
    table(
      r.items,
      [
        { heading: 'id', cell: (j) => j.id },
        { heading: 'schedule', cell: (j) => `${j.cron} ${j.timezone}` },
        { heading: 'state', cell: (j) => (j.running_session_id ? 'running' : j.enabled ? 'on' : 'paused') },
        { heading: 'next run', cell: (j) => (j.enabled ? when(j.next_run_at) : '-') },
        { heading: 'agent', cell: (j) => j.agent_id },
        { heading: 'title', cell: (j) => j.title, max: 40 },
      ],
      'no cron jobs: add one with skald cron add',
    ),
  );
}

export async function cronAdd(
  rt: Runtime,
  o: Output & { cron: string; prompt: string; title?: string; agent?: string; timezone?: string; paused?: boolean },
): Promise<void> {
  const { client } = await signedIn(rt);
  const body = {
    title: o.title ?? o.prompt.slice(0, 80),
    prompt: o.prompt,
    cron: o.cron,
    ...(o.agent ? { agent_id: o.agent } : {}),
    ...(o.timezone ? { timezone: o.timezone } : {}),
    ...(o.paused ? { enabled: false } : {}),
  };
  const r = await api(client, 'createCronJob', { body });
  print(rt, o, r, () => `added cron job ${r.id}\n`);
}

export async function cronRemove(rt: Runtime, id: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  await api(client, 'deleteCronJob', { params: { id } });
  print(rt, o, { id, deleted: true }, () => `removed cron job ${id}\n`);
}

export async function cronSetEnabled(rt: Runtime, id: string, enabled: boolean, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'updateCronJob', {
    params: { id },
    body: { enabled },
  });
  print(rt, o, r, () => `${enabled ? 'resumed' : 'paused'} cron job ${id}\n`);
}

// --- mcp --------------------------------------------------------------------------------------

export async function mcpList(rt: Runtime, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'listMcpServers', {});
  print(rt, o, r, () =>
    table(
      r.items,
      [
        { heading: 'name', cell: (s) => s.name },
        { heading: 'transport', cell: (s) => s.transport },
        { heading: 'status', cell: (s) => (s.error ? `${s.status}: ${s.error}` : s.status), max: 40 },
        { heading: 'tools', cell: (s) => s.tools_count },
        {
          heading: 'runs',
          cell: (s) => (s.transport === 'stdio' ? [s.command, ...s.args].join(' ') : s.url),
          max: 50,
        },
      ],
      'no MCP servers: add one with skald mcp add',
    ),
  );
}

/** `KEY=value` pairs of `--env` / `--header`, each named when it is not one. */
export function keyValues(pairs: readonly string[] | undefined, flag: string): Record<string, string> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const at = p.indexOf('=');
    if (at <= 0) throw new CliError(`${flag} ${p}: expected NAME=value`, EXIT.usage);
    out[p.slice(0, at)] = p.slice(at + 1);
  }
  return out;
}

export async function mcpAdd(
  rt: Runtime,
  name: string,
  o: Output & { command?: string[]; url?: string; env?: string[]; header?: string[]; network?: boolean },
): Promise<void> {
  const hasCommand = !!o.command && o.command.length > 0;
  if (hasCommand === !!o.url)
    throw new CliError('mcp add: give either --url <url> (http) or a command after -- (stdio)', EXIT.usage);
  const body = hasCommand
    ? {
        name,
        transport: 'stdio' as const,
        command: o.command![0],
        args: o.command!.slice(1),
        ...(o.network ? { network: true } : {}),
        ...(o.env ? { env: keyValues(o.env, '--env') } : {}),
      }
    : {
        name,
        transport: 'http' as const,
        url: o.url!,
        ...(o.header ? { headers: keyValues(o.header, '--header') } : {}),
      };
  const { client } = await signedIn(rt);
  const r = await api(client, 'createMcpServer', { body });
  print(rt, o, r, () => `added MCP server ${r.name} (${r.status})\n`);
}

export async function mcpRemove(rt: Runtime, name: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  await api(client, 'deleteMcpServer', { params: { name } });
  print(rt, o, { name, deleted: true }, () => `removed MCP server ${name}\n`);
}

// --- tokens -----------------------------------------------------------------------------------

export async function tokensList(rt: Runtime, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'listTokens', {});
  print(rt, o, r, () =>
    table(
      r.items,
      [
        { heading: 'id', cell: (t) => t.id },
        { heading: 'name', cell: (t) => t.name, max: 40 },
        { heading: 'created', cell: (t) => when(t.created_at) },
        { heading: 'last used', cell: (t) => when(t.last_used_at) },
      ],
      'no API tokens: create one with skald tokens create <name>',
    ),
  );
}

/** Creates an API token: the token is printed once, to stdout alone, so it can be piped into a secret store. */
export async function tokensCreate(rt: Runtime, name: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  const r = await api(client, 'createToken', { body: { name } });
  if (o.json) return print(rt, o, r, () => '');
  rt.err(`created API token ${r.id} (${r.name}); it is shown this once:\n`);
  rt.out(`${r.token}\n`);
}

export async function tokensRevoke(rt: Runtime, id: string, o: Output): Promise<void> {
  const { client } = await signedIn(rt);
  await api(client, 'revokeToken', { params: { id } });
  print(rt, o, { id, revoked: true }, () => `revoked API token ${id}\n`);
}
