import { preparedRows } from '@skald/persistence/query-rows';
import { InboxItem, LeaseLostError, Mutation, SessionEventDraft } from '@skald/agent-loop';
import type { DataSource } from 'typeorm';
import type { CommittedEvent } from './committed-event';
import { fenceAndAppend } from './event-log';
import { Fence, rejected } from './fence';
import { applyMutation, inboxIdsSettledBy, insertUsage, lockInboxItems, notQueued } from './mutation-sql';
import { fitsOneStatement, oneStatementCommit, settledInboxIds, UsageRow } from './one-statement-commit';
import type { Read } from './row-reads';
import { inboxOf } from './session-rows';

/** The one-statement commit's head row: the fence, whether every inbox item it needs was queued, and the outcome. */
type CommitRead = Read<{
  fenced: number;
  ok: boolean;
  claimed: string[];
  inbox: string;
  stop: boolean;
  last_seq: number;
  user_id: string;
}>;

/**
 * The answered model calls whose ledger rows wait to ride with the commit of their message (see
 * LlmUsageRepository): the store takes them for the messages it commits and gives them back if the
 * commit fails.
 */
export interface PendingUsage {
  take(messageIds: readonly string[]): UsageRow[];
  giveBack(rows: readonly UsageRow[]): void;
}

/** What a commit wrote and saw, for the store to remember. */
interface Written {
  /** Its events with their seqs, to announce. */
  events: CommittedEvent[];
  /** The session's queued inbox as of the commit. */
  inbox: InboxItem[];
  /** Whether a /stop is recorded, when it was one statement that finished the turn; else null. */
  stop: boolean | null;
}

/**
 * One commit of the lease holder: the hot commits (see `fitsOneStatement`) as one prepared
 * statement, the others as a transaction whose first statement is the fence. Either writes
 * everything or nothing; a lease lost writes nothing and throws `LeaseLostError`, a refusal for the
 * commit's data `CommitRejectedError`.
 */
export function writeCommit(
  ds: DataSource,
  sessionId: string,
  fence: Fence,
  mutations: Mutation[],
  events: SessionEventDraft[],
  usage: UsageRow[],
): Promise<Written> {
  return fitsOneStatement(mutations)
    ? writeOneStatement(ds, sessionId, fence, mutations, events, usage)
    : writeFenced(ds, sessionId, fence, mutations, events, usage);
}

/** The commit as one prepared statement (see one-statement-commit.ts). */
async function writeOneStatement(
  ds: DataSource,
  sessionId: string,
  fence: Fence,
  mutations: Mutation[],
  events: SessionEventDraft[],
  usage: UsageRow[],
): Promise<Written> {
  let rows: CommitRead[];
  try {
    const statement = oneStatementCommit(sessionId, fence, mutations, events, usage);
    rows = await preparedRows<CommitRead>(ds, statement.name, statement.text, statement.values);
  } catch (e) {
    throw rejected(e);
  }
  const head = rows[0];
  if (!head || Number(head.fenced) === 0)
    throw new LeaseLostError(`lease of session ${sessionId} lost (epoch ${fence.epoch})`);
  if (head.ok !== true) {
    // An item it enters or consumes was not queued here (`go`): nothing was written.
    const claimed = new Set(head.claimed as string[]);
    const gone = settledInboxIds(mutations).find((id) => !claimed.has(id));
    throw notQueued(gone ?? 'of this commit');
  }
  const inbox = inboxOf(head.inbox);
  const stop =
    mutations.some((m) => m.kind === 'setTurnState' && m.state === 'finished') && typeof head.stop === 'boolean'
      ? head.stop
      : null;
  if (events.length === 0) return { events: [], inbox, stop };
  if (head.last_seq === null || head.last_seq === undefined) throw new Error(`session ${sessionId} not found`);
  const first = Number(head.last_seq) - events.length + 1;
  return {
    events: events.map((event, i) => ({ userId: String(head.user_id), sessionId, seq: first + i, event })),
    inbox,
    stop,
  };
}

/** The commit as a transaction: the fence and the events first (event-log.ts), then each mutation's statement. */
async function writeFenced(
  ds: DataSource,
  sessionId: string,
  fence: Fence,
  mutations: Mutation[],
  events: SessionEventDraft[],
  usage: UsageRow[],
): Promise<Written> {
  const committed = await ds.transaction(async (tx) => {
    const fenced = await fenceAndAppend(tx, sessionId, fence, events);
    try {
      await lockInboxItems(tx, mutations);
      for (const m of mutations) await applyMutation(tx, sessionId, m, fence.epoch, events.length);
      for (const u of usage) await insertUsage(tx, u);
      return fenced;
    } catch (e) {
      throw rejected(e);
    }
  });
  // The queued inbox as the fence statement saw it, less what this commit settled: the inbox as
  // of the commit, as a one-statement commit returns it.
  const settled = new Set(inboxIdsSettledBy(mutations));
  return { events: committed.events, inbox: committed.inbox.filter((i) => !settled.has(i.id)), stop: null };
}
