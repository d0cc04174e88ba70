import { AsyncLocalStorage } from 'node:async_hooks';
import type { LogIds, WireIds } from './log-ids';

const storage = new AsyncLocalStorage<LogIds>();

/**
 * Runs `fn` so that every line logged while it runs — in its callbacks and awaits too — carries
 * `ids` (see `createLogger`'s mixin), on top of the ids of the enclosing context. Undefined ids
 * are left out; a call site's own fields win over these.
 */
export function withLogIds<T>(ids: LogIds, fn: () => T): T {
  const defined = Object.fromEntries(Object.entries(ids).filter(([, v]) => v !== undefined)) as LogIds;
  return storage.run({ ...storage.getStore(), ...defined }, fn);
}

/** The ids of the current context ({} outside any). */
export function currentLogIds(): LogIds {
  return storage.getStore() ?? {};
}

/** Runs a request handler with the ids its payload carries, so that its log lines name the turn and call. */
export function withRequestLogIds<T>(req: WireIds, fn: () => T): T {
  return withLogIds(
    {
      userId: req.actor?.userId,
      sessionId: req.session_id ?? undefined,
      turnId: req.turn_id ?? undefined,
      toolCallId: req.tool_call_id ?? undefined,
    },
    fn,
  );
}
