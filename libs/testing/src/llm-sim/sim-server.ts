import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleAdmin, parseLatency } from './sim-admin';
import { handleChatCompletion } from './sim-chat-handler';
import { openAiError, readBody, SimBodyTooLarge, sendJson } from './sim-http';
import { SimRequestLog } from './sim-request-log';
import { SimScriptStore } from './sim-script-store';
import type {
  LlmSimOptions,
  SimLatency,
  SimReply,
  SimRequestLogEntry,
  SimRequestQuery,
  SimScriptInfo,
  SimScriptInput,
} from './sim-types';

export const DEFAULT_SIM_MODELS = ['sim-model', 'sim-model-strong', 'sim-model-weak'];

/** A running llm-sim, controlled in-process. For a sim in another process use `LlmSimAdminClient`. */
export interface LlmSim {
  /** OpenAI base URL, e.g. `http://127.0.0.1:4010/v1`: give it to the `openai` client as `baseURL`. */
  readonly url: string;
  /** Root URL of the server, where the `/_sim/` admin API lives. */
  readonly adminUrl: string;
  readonly port: number;
  /** Registers a script; returns its id. */
  script(input: SimScriptInput): string;
  /** Shorthand: appends replies to a new default (unkeyed) script; returns its id. */
  reply(...replies: SimReply[]): string;
  scripts(): SimScriptInfo[];
  unscript(id: string): boolean;
  /** Copies of the logged chat-completions requests, oldest first. */
  requests(query?: SimRequestQuery): SimRequestLogEntry[];
  /** Resolves with the first logged request satisfying the predicate (checked on every log change). */
  waitForRequest(
    predicate: (entry: SimRequestLogEntry) => boolean,
    options?: { timeoutMs?: number },
  ): Promise<SimRequestLogEntry>;
  setLatency(latency: SimLatency): void;
  /** Clears scripts, the request log and the global latency (back to the start options). */
  reset(): void;
  /** Stops listening and destroys open connections (a hanging `timeout` reply included). */
  close(): Promise<void>;
}

export async function startLlmSim(options: LlmSimOptions = {}): Promise<LlmSim> {
  const scripts = new SimScriptStore();
  const log = new SimRequestLog();
  const initialLatency = parseLatency(options.latency);
  let latency: SimLatency = { ...initialLatency };
  let toolCallSeq = 0;
  const models = options.models ?? DEFAULT_SIM_MODELS;
  const reset = (): void => {
    scripts.clear();
    log.clear();
    latency = { ...initialLatency };
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '');
    const rawBody = await readBody(req);
    if (path.startsWith('/_sim/')) {
      handleAdmin(req, res, rawBody, {
        scripts,
        log,
        getLatency: () => ({ ...latency }),
        setLatency: (next) => (latency = { ...next }),
        reset,
      });
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      await handleChatCompletion(req, res, rawBody, {
        scripts,
        log,
        latency: () => latency,
        apiKey: options.apiKey,
        nextToolCallId: () => `call_sim_${String(++toolCallSeq).padStart(6, '0')}`,
      });
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: models.map(modelObject) });
      return;
    }
    const model = /^\/v1\/models\/(.+)$/.exec(path);
    if (req.method === 'GET' && model) {
      const id = decodeURIComponent(model[1]);
      if (models.includes(id)) sendJson(res, 200, modelObject(id));
      else
        sendJson(
          res,
          404,
          openAiError(`The model '${id}' does not exist`, 'invalid_request_error', 'model', 'model_not_found'),
        );
      return;
    }
    sendJson(
      res,
      404,
      openAiError(`Unknown request URL: ${req.method ?? ''} ${path}.`, 'invalid_request_error', null, 'unknown_url'),
    );
  };

  const server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const tooLarge = err instanceof SimBodyTooLarge;
      const message = err instanceof Error ? err.message : String(err);
      sendJson(
        res,
        tooLarge ? 413 : 500,
        openAiError(`llm-sim: ${message}`, tooLarge ? 'invalid_request_error' : 'server_error'),
      );
    });
  });
  const port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
  const host = options.host ?? '127.0.0.1';
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const adminUrl = `http://${urlHost}:${port}`;

  return {
    url: `${adminUrl}/v1`,
    adminUrl,
    port,
    script: (input) => scripts.add(input),
    reply: (...replies) => scripts.add({ replies }),
    scripts: () => scripts.list(),
    unscript: (id) => scripts.remove(id),
    requests: (query) => log.list(query),
    waitForRequest: (predicate, opts) => log.waitFor(predicate, opts?.timeoutMs ?? 5000),
    setLatency: (next) => (latency = parseLatency(next)),
    reset,
    close: () => closeServer(server),
  };
}

function modelObject(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 1700000000, owned_by: 'llm-sim' };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}
