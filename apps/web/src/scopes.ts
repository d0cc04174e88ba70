import type { ApprovalChannel, HumanDecision, BypassScope, InboxDto } from '@skald/contracts';

export type SessionApproval = NonNullable<InboxDto['approvals'][number]['session_approval']>;

/** A bypass scope in words, as the card, the inbox and the bypass list spell it out. */
export function describeScope(scope: BypassScope): string {
  if (scope === 'all') return 'every tool';
  if ('category' in scope) return `every ${scope.category} tool`;
  if ('mcp_server' in scope) return `every tool of the MCP server ${scope.mcp_server}`;
  if (scope.program !== undefined) {
    // the approval service derives the option shape from the approved call (rules/programs.ts);
    // a scope without one (stored before shapes existed) covers commands without options
    const opts = scope.options ?? [];
    const only = `using only the ${opts.length === 1 ? 'option' : 'options'} ${opts.join(', ')}`;
    return scope.subcommand
      ? `the command ${scope.program} ${scope.subcommand} with any arguments${opts.length === 0 ? ' and no options' : `, ${only}`}`
      : `the command ${scope.program} without arguments${opts.length === 0 ? ' or options' : `, ${only}`}`;
  }
  if (scope.directory !== undefined) return `${scope.tool} on files directly in ${scope.directory}`;
  if (scope.host !== undefined) return `${scope.tool} of pages on ${scope.host}`;
  return scope.tool;
}

/** "1 h", "30 min", "2 d": a lifetime as the card shows it. */
export function describeSecs(secs: number): string {
  if (secs === 0) return 'the whole session';
  if (secs % 86400 === 0) return `${secs / 86400} d`;
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

/** When a session approval opened now would end, in the viewer's clock. */
export function expiryFromNow(secs: number, now: Date = new Date()): string {
  return new Date(now.getTime() + secs * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

const CHANNEL_WORDS: Record<ApprovalChannel, string> = {
  card: 'in the chat',
  inbox: 'in the inbox',
  cli: 'in the CLI',
  push: 'from a notification',
  api: 'through the API',
};

/**
 * How an approval was answered, in words: who (`you`, someone `named` by id — the owner of a
 * conversation an admin reads — or else an admin answering for the user), where, and the session
 * approval it opened ("calls like this one for 1 h", a wide scope for the session). The time is
 * shown beside it.
 */
export function describeDecision(
  decision: HumanDecision,
  me: string | null,
  named: ReadonlyMap<string, string> = new Map(),
): string {
  const who = decision.by_user_id === me ? 'you' : (named.get(decision.by_user_id) ?? 'an admin');
  const where = decision.channel ? ` ${CHANNEL_WORDS[decision.channel]}` : '';
  const b = decision.bypass;
  const lasting = b?.secs === undefined || b.secs === 0 ? '' : ` for ${describeSecs(b.secs)}`;
  const session = !b
    ? ''
    : b.scope === 'call'
      ? `, and for this session calls like this one${lasting}`
      : `, and for this session ${describeScope(b.scope)}${lasting}`;
  const edited = decision.edited ? ', with the call edited' : '';
  return `by ${who}${where}${edited}${session}`;
}
