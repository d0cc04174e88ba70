import type { CallRecord } from './records';

/** How one tool call ended: its record (committed by the caller, in call order) and whether the
 *  frame continues, was cancelled, or parked waiting for a human. */
export type CallEnd =
  | { flow: 'continue'; record: CallRecord }
  | { flow: 'cancelled'; record: CallRecord }
  | { flow: 'parked'; toolCallId: string; requestId: string };
