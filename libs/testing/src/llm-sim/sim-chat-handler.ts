import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  answerFacts,
  completionObject,
  resolveCompletion,
  streamChunks,
  type AnswerFacts,
  type CompletionIdentity,
} from './sim-completion';
import { openAiError, parseJson, pause, redactedHeaders, sendJson } from './sim-http';
import type { SimRequestLog } from './sim-request-log';
import { lastUserText, type SimScriptStore } from './sim-script-store';
import type {
  SimChatRequest,
  SimCompletionReply,
  SimFailure,
  SimLatency,
  SimReplySpec,
  SimRequestLogEntry,
} from './sim-types';
import { validateChatRequest } from './sim-validation';

export interface SimChatDeps {
  scripts: SimScriptStore;
  log: SimRequestLog;
  latency: () => SimLatency;
  apiKey: string | undefined;
  nextToolCallId: () => string;
}

/** One in-flight chat-completions exchange: the response, its log entry, and whether the client left. */
interface Exchange {
  res: ServerResponse;
  entry: SimRequestLogEntry;
  deps: SimChatDeps;
  /** Fires when the connection closes before the reply is complete. */
  gone: AbortSignal;
  /** Set just before the sim itself destroys the socket, so that is not taken for a client abort. */
  simDestroyed: boolean;
}

const HTTP_ERROR_DEFAULTS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Bad request (scripted by llm-sim).', type: 'invalid_request_error', code: null },
  401: {
    message: 'Incorrect API key provided (scripted by llm-sim).',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  },
  403: { message: 'Permission denied (scripted by llm-sim).', type: 'invalid_request_error', code: null },
  404: {
    message: 'The model does not exist (scripted by llm-sim).',
    type: 'invalid_request_error',
    code: 'model_not_found',
  },
  422: { message: 'Unprocessable entity (scripted by llm-sim).', type: 'invalid_request_error', code: null },
  429: { message: 'Rate limit reached (scripted by llm-sim).', type: 'requests', code: 'rate_limit_exceeded' },
  500: {
    message: 'The server had an error while processing your request (scripted by llm-sim).',
    type: 'server_error',
    code: null,
  },
  503: { message: 'The engine is currently overloaded (scripted by llm-sim).', type: 'server_error', code: null },
};

export async function handleChatCompletion(
  req: IncomingMessage,
  res: ServerResponse,
  rawBody: string,
  deps: SimChatDeps,
): Promise<void> {
  const parsed = parseJson(rawBody);
  const body = parsed.ok ? parsed.value : null;
  const stream = typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true;
  // The log keeps the raw text; its `body` is parsed again only if someone reads it.
  const entry = deps.log.open(
    { method: req.method ?? 'POST', path: req.url ?? '', ...redactedHeaders(req), stream },
    rawBody,
  );
  const controller = new AbortController();
  const ex: Exchange = { res, entry, deps, gone: controller.signal, simDestroyed: false };
  res.on('close', () => {
    if (res.writableFinished) return;
    controller.abort();
    if (!ex.simDestroyed) {
      const outcome = entry.outcome === 'pending' ? 'client_aborted' : entry.outcome;
      deps.log.update(entry, { clientAborted: true, outcome, finishedAt: new Date().toISOString() });
    }
  });

  if (deps.apiKey !== undefined && req.headers.authorization !== `Bearer ${deps.apiKey}`) {
    reject(
      ex,
      401,
      openAiError('Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key'),
      'invalid api key',
    );
    return;
  }
  if (!parsed.ok) {
    reject(
      ex,
      400,
      openAiError('We could not parse the JSON body of your request.', 'invalid_request_error'),
      'invalid JSON',
    );
    return;
  }
  const validation = validateChatRequest(body);
  if (!validation.ok) {
    const { message, param } = validation.error;
    reject(ex, 400, openAiError(message, 'invalid_request_error', param), message);
    return;
  }
  const request = validation.request;
  const pick = deps.scripts.take(request);
  deps.log.update(entry, { scriptId: pick?.scriptId ?? null });
  let reply: SimReplySpec;
  try {
    const scripted = pick?.reply ?? unscriptedReply(request);
    reply =
      typeof scripted === 'function'
        ? await scripted({ body: request, requestId: entry.id, lastUserText: lastUserText(request) })
        : scripted;
  } catch (err) {
    const message = `llm-sim reply function threw: ${err instanceof Error ? err.message : String(err)}`;
    sendJson(res, 500, openAiError(message, 'server_error'));
    finish(ex, { status: 500, outcome: 'http_error', error: message });
    return;
  }
  const latency = { ...deps.latency(), ...(reply.latency ?? {}) };
  // Returned, not awaited: this frame, which holds the parsed request, ends here.
  return answer(ex, reply, answerFacts(request, 'fail' in reply ? null : reply), latency, stream);
}

/** After the reply is chosen: the request is known by its facts only from here on (see `AnswerFacts`). */
async function answer(
  ex: Exchange,
  reply: SimReplySpec,
  request: AnswerFacts,
  latency: SimLatency,
  stream: boolean,
): Promise<void> {
  await pause(latency.firstByteMs ?? 0, ex.gone);
  if (ex.gone.aborted) return;
  if ('fail' in reply) {
    fail(ex, reply.fail, request, latency);
    return;
  }
  if (stream) await streamReply(ex, reply, request, latency);
  else answerOnce(ex, reply, request);
}

function unscriptedReply(request: SimChatRequest): SimCompletionReply {
  const text = lastUserText(request);
  return { content: `[llm-sim] No scripted reply matched this request; echoing the last user message: ${text}` };
}

function identity(ex: Exchange, request: AnswerFacts): CompletionIdentity {
  return {
    id: `chatcmpl-sim${String(ex.entry.id).padStart(8, '0')}`,
    created: Math.floor(Date.now() / 1000),
    model: request.model,
  };
}

function answerOnce(ex: Exchange, reply: SimCompletionReply, request: AnswerFacts): void {
  if (reply.dropAfterChunks !== undefined) {
    destroy(ex, 'dropped');
    return;
  }
  const resolved = resolveCompletion(reply, request, ex.deps.nextToolCallId);
  sendJson(ex.res, 200, completionObject(resolved, identity(ex, request)), requestIdHeader(ex));
  finish(ex, { status: 200, outcome: 'completed' });
}

async function streamReply(
  ex: Exchange,
  reply: SimCompletionReply,
  request: AnswerFacts,
  latency: SimLatency,
): Promise<void> {
  const includeUsage = request.includeUsage;
  const resolved = resolveCompletion(reply, request, ex.deps.nextToolCallId);
  const chunks = streamChunks(resolved, identity(ex, request), includeUsage);
  startStream(ex);
  if (reply.dropAfterChunks === undefined && !((latency.betweenChunksMs ?? 0) > 0)) {
    writeAllEvents(ex, chunks);
    return;
  }
  for (const [i, chunk] of chunks.entries()) {
    if (reply.dropAfterChunks !== undefined && i >= reply.dropAfterChunks) {
      destroy(ex, 'dropped');
      return;
    }
    if (i > 0) await pause(latency.betweenChunksMs ?? 0, ex.gone);
    if (ex.gone.aborted) return;
    await writeEvent(ex, JSON.stringify(chunk));
  }
  await writeEvent(ex, '[DONE]');
  ex.res.end();
  finish(ex, { outcome: 'completed' });
}

function fail(ex: Exchange, failure: SimFailure, request: AnswerFacts, latency: SimLatency): void {
  switch (failure.kind) {
    case 'http_error': {
      const defaults = HTTP_ERROR_DEFAULTS[failure.status] ?? {
        message: `HTTP ${failure.status} (scripted by llm-sim).`,
        type: failure.status >= 500 ? 'server_error' : 'invalid_request_error',
        code: null,
      };
      const headers: Record<string, string> = requestIdHeader(ex);
      if (failure.retryAfterSeconds !== undefined) headers['retry-after'] = String(failure.retryAfterSeconds);
      const message = failure.message ?? defaults.message;
      sendJson(
        ex.res,
        failure.status,
        openAiError(message, failure.type ?? defaults.type, null, failure.code ?? defaults.code),
        headers,
      );
      finish(ex, { status: failure.status, outcome: 'http_error', error: message });
      return;
    }
    case 'timeout':
      // Accept and never answer: the exchange ends when the client closes the connection.
      ex.deps.log.update(ex.entry, { outcome: 'timeout' });
      return;
    case 'drop':
      destroy(ex, 'dropped');
      return;
    case 'stream_error':
      void streamThenError(
        ex,
        failure.afterChunks,
        failure.message ?? 'Upstream provider error (scripted by llm-sim).',
        request,
        latency,
      );
      return;
  }
}

async function streamThenError(
  ex: Exchange,
  afterChunks: number,
  message: string,
  request: AnswerFacts,
  latency: SimLatency,
): Promise<void> {
  const resolved = resolveCompletion(
    { content: 'This answer is cut short by a scripted stream error.' },
    request,
    ex.deps.nextToolCallId,
  );
  const chunks = streamChunks(resolved, identity(ex, request), false).slice(0, Math.max(0, afterChunks));
  startStream(ex);
  for (const [i, chunk] of chunks.entries()) {
    if (i > 0) await pause(latency.betweenChunksMs ?? 0, ex.gone);
    if (ex.gone.aborted) return;
    await writeEvent(ex, JSON.stringify(chunk));
  }
  await writeEvent(ex, JSON.stringify(openAiError(message, 'server_error', null, 'upstream_error')));
  ex.res.end();
  finish(ex, { outcome: 'stream_error', error: message });
}

function startStream(ex: Exchange): void {
  ex.res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...requestIdHeader(ex),
  });
  ex.deps.log.update(ex.entry, { status: 200 });
}

/**
 * An unpaced answer (no delay between chunks, no scripted drop) in one pass of the event loop: the
 * same events, each still its own `res.write` (so its own HTTP chunk, with the same bytes), under one
 * cork, so they leave in one `writev` with the terminating chunk instead of one write and one
 * event-loop turn each.
 */
function writeAllEvents(ex: Exchange, chunks: Array<Record<string, unknown>>): void {
  ex.res.cork();
  for (const chunk of chunks) writeEventNow(ex, JSON.stringify(chunk));
  writeEventNow(ex, '[DONE]');
  ex.res.end(); // uncorks
  finish(ex, { outcome: 'completed' });
}

function writeEventNow(ex: Exchange, data: string): void {
  ex.deps.log.update(ex.entry, { chunksSent: ex.entry.chunksSent + 1 });
  ex.res.write(`data: ${data}\n\n`);
}

/** Writes one SSE event and resolves once it is handed to the socket, so a later drop happens after it. */
function writeEvent(ex: Exchange, data: string): Promise<void> {
  ex.deps.log.update(ex.entry, { chunksSent: ex.entry.chunksSent + 1 });
  return new Promise((resolve) => {
    const done = (): void => {
      ex.gone.removeEventListener('abort', done);
      resolve();
    };
    ex.gone.addEventListener('abort', done, { once: true });
    ex.res.write(`data: ${data}\n\n`, done);
  });
}

function requestIdHeader(ex: Exchange): Record<string, string> {
  return { 'x-request-id': `req_sim_${ex.entry.id}` };
}

function reject(ex: Exchange, status: number, body: unknown, error: string): void {
  sendJson(ex.res, status, body, requestIdHeader(ex));
  finish(ex, { status, outcome: 'rejected', error });
}

function destroy(ex: Exchange, outcome: 'dropped'): void {
  ex.simDestroyed = true;
  ex.res.socket?.destroy();
  finish(ex, { outcome });
}

function finish(ex: Exchange, change: Partial<SimRequestLogEntry>): void {
  ex.deps.log.update(ex.entry, { ...change, finishedAt: new Date().toISOString() });
}
