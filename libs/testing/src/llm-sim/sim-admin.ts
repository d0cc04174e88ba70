import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseJson, sendJson } from './sim-http';
import type { SimRequestLog } from './sim-request-log';
import { SimScriptError, type SimScriptStore } from './sim-script-store';
import type { SimLatency, SimScriptInput } from './sim-types';

/**
 * The admin HTTP API under `/_sim/`, for a test running in another process:
 *
 *   GET    /_sim/health                       → 200 {ok: true}
 *   POST   /_sim/scripts     SimScriptInput | SimScriptInput[] → 201 {ids: string[]}
 *   GET    /_sim/scripts                      → 200 {scripts: SimScriptInfo[]}
 *   DELETE /_sim/scripts/:id                  → 204 | 404
 *   GET    /_sim/requests?contains=&since=    → 200 {requests: SimRequestLogEntry[]}
 *   GET    /_sim/config                       → 200 {latency}
 *   PUT    /_sim/config      {latency}        → 200 {latency}
 *   POST   /_sim/reset                        → 204 (scripts, log and latency cleared)
 */
export interface SimAdminDeps {
  scripts: SimScriptStore;
  log: SimRequestLog;
  getLatency: () => SimLatency;
  setLatency: (latency: SimLatency) => void;
  reset: () => void;
}

export function handleAdmin(req: IncomingMessage, res: ServerResponse, rawBody: string, deps: SimAdminDeps): void {
  const url = new URL(req.url ?? '/', 'http://sim.local');
  const route = `${req.method ?? 'GET'} ${url.pathname.replace(/\/+$/, '')}`;
  const scriptMatch = /^DELETE \/_sim\/scripts\/([^/]+)$/.exec(route);
  try {
    if (scriptMatch) {
      const removed = deps.scripts.remove(decodeURIComponent(scriptMatch[1]));
      if (removed) res.writeHead(204).end();
      else sendJson(res, 404, adminError(`no script ${scriptMatch[1]}`));
      return;
    }
    switch (route) {
      case 'GET /_sim/health':
        sendJson(res, 200, { ok: true });
        return;
      case 'POST /_sim/scripts': {
        const body = jsonBody(rawBody);
        const inputs = (Array.isArray(body) ? body : [body]) as SimScriptInput[];
        const ids = inputs.map((input) => deps.scripts.add(input));
        sendJson(res, 201, { ids });
        return;
      }
      case 'GET /_sim/scripts':
        sendJson(res, 200, { scripts: deps.scripts.list() });
        return;
      case 'GET /_sim/requests': {
        const since = url.searchParams.get('since');
        const contains = url.searchParams.get('contains');
        sendJson(res, 200, {
          requests: deps.log.list({
            sinceId: since === null ? undefined : parseSince(since),
            contains: contains === null ? undefined : contains,
          }),
        });
        return;
      }
      case 'GET /_sim/config':
        sendJson(res, 200, { latency: deps.getLatency() });
        return;
      case 'PUT /_sim/config': {
        const body = jsonBody(rawBody) as { latency?: unknown };
        deps.setLatency(parseLatency(body?.latency));
        sendJson(res, 200, { latency: deps.getLatency() });
        return;
      }
      case 'POST /_sim/reset':
        deps.reset();
        res.writeHead(204).end();
        return;
      default:
        sendJson(res, 404, adminError(`no admin route ${route}`));
    }
  } catch (err) {
    if (err instanceof SimScriptError || err instanceof AdminInputError) {
      sendJson(res, 400, adminError(err.message));
      return;
    }
    throw err;
  }
}

class AdminInputError extends Error {}

function parseSince(value: string): number {
  const id = Number(value);
  if (!Number.isInteger(id) || id < 0) throw new AdminInputError("'since' must be a request id (an integer ≥ 0)");
  return id;
}

function jsonBody(rawBody: string): unknown {
  const parsed = parseJson(rawBody);
  if (!parsed.ok) throw new AdminInputError('the body is not valid JSON');
  return parsed.value;
}

export function parseLatency(value: unknown): SimLatency {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new AdminInputError("'latency' must be an object");
  const latency: SimLatency = {};
  for (const key of ['firstByteMs', 'betweenChunksMs'] as const) {
    const ms = (value as Record<string, unknown>)[key];
    if (ms === undefined) continue;
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      throw new AdminInputError(`'latency.${key}' must be a number ≥ 0`);
    latency[key] = ms;
  }
  return latency;
}

function adminError(message: string): unknown {
  return { error: { message, type: 'llm_sim_admin_error' } };
}
