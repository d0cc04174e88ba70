import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { compactSession, CompactSessionResult, ContextReport, describeContext } from '@skald/agent-loop';
import { Actor, type WorkerCommand } from '@skald/contracts';
import { SessionsRepository } from '../sessions/sessions.repository';
import { UserSettingsRepository } from '../settings/user-settings.repository';
import { GroupPolicyService } from '../groups/group-policy.service';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import { TurnDriver } from '../turns/turn-driver';

const BUSY = 'A turn is running in this conversation. Try again when it has finished, or /stop it first.';

const n = (x: number): string => x.toLocaleString('en-US');

/**
 * The slash commands that act on the session worker's state: /context, /compact, /resettools,
 * /clear, /sethome. Each acts on the caller's active session of the source; whatever it changes is
 * committed before the answer goes back.
 */
@Injectable()
export class SessionCommandsService {
  constructor(
    private readonly ds: Database,
    private readonly sessions: SessionsRepository,
    private readonly settings: UserSettingsRepository,
    private readonly driver: TurnDriver,
    private readonly policies: GroupPolicyService,
  ) {}

  async run(
    actor: Actor,
    source: string,
    command: WorkerCommand,
    _args: string,
  ): Promise<{ command: string; content: string }> {
    const content = await this.dispatch(actor, source, command);
    return { command, content };
  }

  private async dispatch(actor: Actor, source: string, command: WorkerCommand): Promise<string> {
    switch (command) {
      case '/sethome':
        await this.settings.setHomeSource({ userId: actor.userId }, source);
        return `Notifications now go to this source (${source}).`;
      case '/resettools':
        return this.resetTools(actor, source);
      case '/context':
        return this.context(actor, source);
      case '/compact':
        return this.compact(actor, source);
      case '/clear':
        return this.clear(actor, source);
    }
  }

  private async sessionId(actor: Actor, source: string): Promise<string> {
    return (await this.sessions.active({ userId: actor.userId, source })).id;
  }

  /**
   * Drops every `activate_tools` grant of the session (root and sub-agent frames), under the lease as
   * /clear and /compact are: a running turn keeps the grants it read at its start and may activate
   * more, so while one runs the command is refused rather than half-applied.
   */
  private async resetTools(actor: Actor, source: string): Promise<string> {
    const sessionId = await this.sessionId(actor, source);
    const groups = await this.driver.withLease(sessionId, (store) => store.revokeAllGrants(sessionId));
    if (groups === null) return BUSY;
    if (groups.length === 0) return 'No tool groups were active in this conversation.';
    return `Deactivated ${groups.length} tool group${groups.length === 1 ? '' : 's'}: ${groups.join(', ')}. The agent can activate them again with activate_tools.`;
  }

  /**
   * /context and /compact build the loop's ports as a turn does, under the owner's group policy read
   * now (a turn reads it with its start): the agent's tools and prompt, and the client the summary is
   * written with, are the ones the owner's groups allow.
   */
  private async context(actor: Actor, source: string): Promise<string> {
    const [sessionId, groups] = await Promise.all([this.sessionId(actor, source), this.policies.of(actor.userId)]);
    const store = new PgSessionStore(this.ds, { owner: '', epoch: 0 }, () => undefined);
    store.primeOwnerGroups(groups);
    return formatContext(await describeContext(this.driver.deps(store, actor.userId, actor.role), { sessionId }));
  }

  private async compact(actor: Actor, source: string): Promise<string> {
    const [sessionId, groups] = await Promise.all([this.sessionId(actor, source), this.policies.of(actor.userId)]);
    const r = await this.driver.withLease(sessionId, (store, signal, role) => {
      store.primeOwnerGroups(groups);
      return compactSession(this.driver.deps(store, actor.userId, role), { sessionId, signal });
    });
    return r === null ? BUSY : formatCompaction(r);
  }

  /**
   * Closes the conversation's root frame: the chat view and the model start empty, in the same
   * session (scratchpad, RunContext and tool grants stay; /new starts a new session). The rows stay
   * in the debug tree.
   */
  private async clear(actor: Actor, source: string): Promise<string> {
    const sessionId = await this.sessionId(actor, source);
    const r = await this.driver.withLease(sessionId, async (store) => {
      const session = await store.getSession(sessionId);
      if (session.turnState !== 'finished') return null;
      const root = (await store.listActiveFrames(sessionId)).find((f) => f.depth === 0);
      if (!root) return 0;
      const shown = (await store.listMessages(root.id)).filter((m) => !m.isSynthetic).length;
      await store.commit(sessionId, [{ kind: 'closeFrame', frameId: root.id }], []);
      return shown;
    });
    if (r === null) return BUSY;
    if (r === 0) return 'The conversation is already empty.';
    return `Cleared the conversation (${r} message${r === 1 ? '' : 's'}): the agent starts fresh from your next message. The scratchpad and activated tools are kept; /new starts a new session.`;
  }
}

const PART_LABELS: Record<ContextReport['parts'][number]['part'], string> = {
  system: 'System prompt (AGENT.md, memory files, MCP list)',
  scratchpad: 'Scratchpad',
  summary: 'Compaction summary',
  history: 'Conversation history',
  dynamic_tail: 'Dynamic tail (memory, date/time, OS, working directory)',
  tail_reminder: 'Tail reminder',
};

export function formatContext(r: ContextReport): string {
  const rows: Array<[string, number, string]> = r.parts.map((p) => [
    PART_LABELS[p.part],
    p.tokens,
    p.part === 'history'
      ? `${p.messages} message${p.messages === 1 ? '' : 's'} from ${r.historyRows} stored row${r.historyRows === 1 ? '' : 's'}`
      : p.messages === 0
        ? 'none'
        : '',
  ]);
  rows.push(['Tool definitions', r.tools.tokens, `${r.tools.count} tools`]);
  const width = Math.max(...rows.map(([label]) => label.length));
  const numWidth = Math.max(...rows.map(([, t]) => n(t).length), n(r.totalTokens).length);
  const line = (label: string, tokens: number, note: string): string =>
    `${label.padEnd(width)}  ${n(tokens).padStart(numWidth)}${note ? `  (${note})` : ''}`;
  const out = [
    `Context of this conversation (agent ${r.agentId}), in estimated tokens:`,
    ...rows.map(([l, t, note]) => line(l, t, note)),
    line('Total', r.totalTokens, ''),
  ];
  out.push(
    r.compaction
      ? `Compaction: above ${n(r.compaction.thresholdTokens)} tokens at the start of a turn, keeping the last ${r.compaction.keepRecent} messages; /compact runs it now.`
      : 'Compaction: off.',
  );
  if (r.contextBudgetTokens !== null) {
    out.push(`Context budget: ${n(r.contextBudgetTokens)} tokens (larger tool results are cut to fit).`);
  }
  return out.join('\n');
}

export function formatCompaction(r: CompactSessionResult): string {
  switch (r.kind) {
    case 'compacted':
      return `Compacted: ${r.folded} older message${r.folded === 1 ? '' : 's'} folded into the summary; the last ${r.kept} are kept as they are.`;
    case 'cancelled':
      return 'Compaction was stopped.';
    case 'skipped':
      switch (r.reason) {
        case 'off':
          return 'Compaction is not configured on this server (SKALD_COMPACTION_THRESHOLD_TOKENS).';
        case 'ephemeral':
          return 'This conversation is ephemeral; it is not compacted.';
        case 'busy':
          return BUSY;
        case 'empty':
        case 'too_few_rows':
          return 'Nothing to compact: the conversation is shorter than the part that is always kept.';
        case 'no_client':
          return 'No LLM client is available to write the summary; nothing was changed.';
        case 'failed':
          return 'The summary could not be written (the model failed); nothing was changed.';
        case 'refused':
          return `The summary was not written: ${r.message ?? 'no model may be called for you now.'}`;
        case 'sub_agent':
        case 'under_threshold':
          return 'Nothing to compact.';
      }
  }
}
