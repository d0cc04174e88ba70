/**
 * The one order in which every statement that locks several `session_inbox` rows locks them: queue
 * order. A commit entering several items (`claim` of the one-statement commit, the transaction
 * path's `lockInboxItems`) and a `/new` re-homing the same deliveries (`moveQueuedDeliveries`)
 * would otherwise each hold a row the other waits for, and Postgres would abort one of them
 * (`deadlock detected`: a failed turn commit or a failed /new). The order must not depend on a
 * plan (an index scan's order) or on the order a commit lists its items in.
 */
export const INBOX_LOCK_ORDER = 'ORDER BY ord FOR UPDATE';
