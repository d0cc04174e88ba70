import { parseJsonText } from '@skald/persistence/pg-text';
import type { ChatHistoryRow, SessionInboxRow, SessionsRow, StackFramesRow, ToolCallsRow } from '@skald/persistence';

/**
 * The session store's rows as it reads them. A row is read through the text codec (see pg-text-query.ts), or is one element of a `json_agg`,
 * before it is mapped here: its columns are those of the generated row type `R` (a misspelt column
 * does not compile), its values are what that read made of them, checked as each mapper converts it.
 */
export type Read<R> = { readonly [K in keyof R]?: unknown };

/** The session row of the turn's start, with the user's pinned client joined in. */
export type SessionRead = Read<SessionsRow & { user_pin: string | null }>;
export type FrameRead = Read<StackFramesRow>;
export type MessageRead = Read<ChatHistoryRow>;
export type ToolCallRead = Read<ToolCallsRow>;
export type InboxRead = Read<SessionInboxRow>;

/** A JSON text column (an aggregate: null counts as none). */
export const jsonText = (v: unknown, none = '[]'): string => (typeof v === 'string' ? v : none);

/**
 * A JSON aggregate of rows, through the text codec (`parseJsonText`: decoded only when a coded
 * string may be in it), with the named timestamp columns as Dates (as node-postgres gives them).
 */
export function jsonRows<R>(text: unknown, timestamps: readonly (keyof R & string)[] = []): Read<R>[] {
  const rows = parseJsonText<Array<Record<string, unknown>>>(jsonText(text));
  if (timestamps.length > 0)
    for (const r of rows)
      for (const c of timestamps) if (r[c] !== null && r[c] !== undefined) r[c] = new Date(r[c] as string);
  return rows;
}
