import type { Logger } from 'pino';

/** The ids a log line is about (STYLE.md: `userId`, `sessionId`, `turnId`, `toolCallId` where they apply). */
export interface LogIds {
  userId?: string;
  sessionId?: string;
  /** The id of the user message that started the turn (its `message_id` on the wire). */
  turnId?: string;
  toolCallId?: string;
}

/** Where a logger keeps the ids its lines carry (read by `createLogger`'s mixin). */
export const LOG_IDS: unique symbol = Symbol('skald.logIds');

type WithIds = Logger & { [LOG_IDS]?: LogIds };

/** The ids every line of `log` carries ({} for a logger made without any). */
export function logIdsOf(log: Logger): LogIds {
  return (log as WithIds)[LOG_IDS] ?? {};
}

/**
 * A child of `log` whose every line carries `ids` on top of the ids `log` carries; undefined ids
 * are left out, and a call site's own field of the same name wins and is written once. The ids
 * travel with the logger a caller passes down — no async context, so nothing is paid per promise
 * (Node 20's AsyncLocalStorage turns on V8's promise hooks for every promise of the process).
 */
export function loggerWithIds(log: Logger, ids: LogIds): Logger {
  const child = log.child({}) as WithIds;
  const merged: LogIds = { ...logIdsOf(log) };
  for (const key of LOG_ID_KEYS) if (ids[key] !== undefined) merged[key] = ids[key];
  child[LOG_IDS] = merged;
  return child;
}

/** Every key of {@link LogIds}, in the order lines show them. */
export const LOG_ID_KEYS = ['userId', 'sessionId', 'turnId', 'toolCallId'] as const satisfies ReadonlyArray<
  keyof LogIds
>;

/** The correlation fields of a NATS request payload (`actor`, `session_id`, `turn_id`, `tool_call_id`). */
export interface WireIds {
  actor?: { userId: string };
  session_id?: string | null;
  turn_id?: string | null;
  tool_call_id?: string | null;
}

/** The ids a request's payload carries: a request handler's logger is `loggerWithIds(log, requestLogIds(req))`. */
export function requestLogIds(req: WireIds): LogIds {
  return {
    userId: req.actor?.userId,
    sessionId: req.session_id ?? undefined,
    turnId: req.turn_id ?? undefined,
    toolCallId: req.tool_call_id ?? undefined,
  };
}
