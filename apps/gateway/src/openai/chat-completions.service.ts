import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  Actor,
  agentOfModel,
  canonicalMessages,
  ChatCompletionRequest,
  describeZodError,
  messageText,
  OPENAI_CONVERSATION_METADATA,
  OPENAI_MODEL_PREFIX,
  OpenAiConversationId,
  OpenAiSystemText,
  OPENAI_SYSTEM_MAX,
  OPENAI_CONVERSATION_HEADER,
  OpenAiIdempotencyKey,
  readSessionEventEnvelope,
  topicOf,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Principal } from '../auth/auth.service';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError, callService } from '../http/api-error';
import { SessionsGateway } from '../sessions/sessions.gateway';
import { OpenAiConversationsRepository, type StoredMessage } from './conversations.repository';
import { EARLY_DELTAS_MAX, LiveAnswer, type LiveDelta } from './live-answer';
import { OpenAiRequestsRepository, requestDigest, requestKey, type TakenRequest } from './requests.repository';
import { sessionEvents, type EventReaderPorts } from './session-event-reader';
import { TurnAnswer, type AnswerStep, type Usage } from './turn-answer';

/** The source of the conversations this endpoint opens (one per conversation, none active). */
export const OPENAI_SOURCE = 'openai';
/** How often the events table is read when no NATS doorbell rang (a lost announcement costs this). */
const POLL_MS = 1_000;
/** The longest one answer waits for its turn; the conversation goes on after it, the answer says so. */
export const MAX_ANSWER_MS = 30 * 60_000;

/** A model as `GET /v1/models` lists it. */
export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'skald';
}

/** A request on its way: the conversation it went to, and the steps of its answer. */
export interface RunningAnswer {
  sessionId: string;
  messageId: string;
  steps: AsyncGenerator<AnswerStep>;
  usage: Usage;
  /** Records the list the client holds once it has the whole answer (`content`). */
  complete(content: string): Promise<void>;
  /** Stops the turn, as the WS `cancel` does (a client abort, a stop sequence). */
  stop(): Promise<void>;
}

/** What a request's headers say to this endpoint. */
export interface RequestHeaders {
  /** `x-skald-conversation`: the conversation the request continues. */
  conversation?: string;
  /** `Idempotency-Key`: requests with the same key are one request (its retries). */
  idempotencyKey?: string;
  /** `x-stainless-retry-count` (the OpenAI SDKs): 1 and more on a retry of the same request. */
  retryCount?: string;
}

/** Whether the OpenAI SDKs say the request is a retry (`x-stainless-retry-count` of 1 or more). */
export function isSdkRetry(retryCount: string | undefined): boolean {
  return retryCount !== undefined && /^[1-9][0-9]{0,3}$/.test(retryCount.trim());
}

/** A request body, parsed; a failure is a 400 naming the field (OpenAI's `param`). */
export function parseChatRequest(body: unknown): ChatCompletionRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError('invalid_input', 'the body must be a JSON object (Content-Type: application/json)');
  const parsed = ChatCompletionRequest.safeParse(body);
  if (!parsed.success) {
    const { field, message } = describeZodError(parsed.error);
    throw new ApiError('invalid_input', message, field);
  }
  // System messages become the conversation's prompt parts: held to what those store.
  const system = parsed.data.messages.flatMap((m, i) => (m.role === 'system' || m.role === 'developer' ? [i] : []));
  if (system.length > OPENAI_SYSTEM_MAX)
    throw new ApiError('invalid_input', `at most ${OPENAI_SYSTEM_MAX} system messages`, 'messages');
  for (const i of system) {
    const text = OpenAiSystemText.safeParse(messageText(parsed.data.messages[i]));
    if (!text.success)
      throw new ApiError(
        'invalid_input',
        `messages.${i}.content: ${describeZodError(text.error).message}`,
        `messages.${i}.content`,
      );
  }
  const last = parsed.data.messages[parsed.data.messages.length - 1];
  if (last?.role !== 'user')
    throw new ApiError('invalid_input', 'the last message must be the user’s (the one the agent answers)', 'messages');
  return parsed.data;
}

/**
 * The OpenAI-compatible Chat Completions endpoint's logic: a model is an agent the caller may use;
 * a request continues a conversation (named, or the one this API token opened whose list the
 * request extends exactly) or opens one with the request's earlier messages as its history; the
 * answer is read from the conversation's stored events.
 */
@Injectable()
export class ChatCompletionsService {
  private readonly inboxUrl: string;

  constructor(
    private readonly bus: Bus,
    private readonly sessions: SessionsGateway,
    private readonly conversations: OpenAiConversationsRepository,
    private readonly requests: OpenAiRequestsRepository,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    const base = (config.SKALD_PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/$/, '');
    this.inboxUrl = `${base}/#inbox`;
  }

  /** `main` and the task agents the caller may use, as models. */
  async models(actor: Actor): Promise<ModelEntry[]> {
    const list = await callService('no session worker is available; retry shortly', () =>
      this.bus.call('agents.list', { actor }),
    );
    const ids = ['main', ...list.items.map((a) => a.id).filter((id) => id !== 'main')];
    return ids.map((id) => ({ id: `${OPENAI_MODEL_PREFIX}${id}`, object: 'model', created: 0, owned_by: 'skald' }));
  }

  /** The agent a model names, if the caller may use it; else 404 `model_not_found`. */
  async agentOf(actor: Actor, model: string): Promise<string> {
    const missing = new ApiError(
      'not_found',
      `The model \`${model}\` does not exist or you do not have access to it (models are ${OPENAI_MODEL_PREFIX}<agent>; GET /v1/models lists them)`,
      'model',
    );
    const agentId = agentOfModel(model);
    if (agentId === null) throw missing;
    try {
      const agent = await callService('no session worker is available; retry shortly', () =>
        this.bus.call('agents.get', { actor, agent_id: agentId }),
      );
      if (agent.type === 'system') throw missing;
    } catch (e) {
      if (e instanceof RemoteError && e.body.code === 'not_found') throw missing;
      throw e;
    }
    return agentId;
  }

  /**
   * Submits the request's last message to its conversation and starts reading the answer. A retry
   * of a request (the same `Idempotency-Key`, or the OpenAI SDK's retry of the same request)
   * submits the same message id to the same conversation: the worker takes it once, and the retry
   * reads the answer of the turn it started.
   */
  async start(
    principal: Principal,
    req: ChatCompletionRequest,
    headers: RequestHeaders,
    signal: AbortSignal,
  ): Promise<RunningAnswer> {
    const { actor } = principal;
    const agentId = await this.agentOf(actor, req.model);
    const all = canonicalMessages(req.messages);
    const earlier = all.slice(0, -1);
    const lastText = messageText(req.messages[req.messages.length - 1]);
    const scope = { userId: actor.userId, apiTokenId: principal.apiTokenId };
    const named = this.named(headers.conversation, req.metadata?.[OPENAI_CONVERSATION_METADATA]);
    const idempotencyKey = this.idempotencyKey(headers.idempotencyKey);
    const facts = { apiTokenId: principal.apiTokenId, model: req.model, named: named?.id ?? null, messages: all };
    const key = requestKey(facts, idempotencyKey);
    const digest = requestDigest(facts);
    const retry = idempotencyKey !== undefined || isSdkRetry(headers.retryCount);
    const earlierTry = retry ? await this.requests.find(actor.userId, key) : null;
    if (earlierTry && earlierTry.digest !== digest)
      throw new ApiError(
        'invalid_input',
        'this Idempotency-Key was sent with another request (a new request takes a new key)',
        'Idempotency-Key',
      );

    let taken: TakenRequest;
    let matched: string | null = null;
    if (earlierTry) taken = earlierTry;
    else {
      matched =
        named === null && principal.apiTokenId
          ? await this.conversations.matching({ ...scope, apiTokenId: principal.apiTokenId }, req.model, earlier)
          : null;
      const sessionId = named?.id ?? matched ?? (await this.open(actor, agentId, earlier));
      taken = await this.take(actor, key, digest, sessionId);
    }
    // Live deltas are heard from before the message is submitted: a round's first words are not missed.
    let live = req.stream === true ? this.listen(actor, taken.sessionId) : null;
    let sent: { message_id: string };
    try {
      sent = await this.submit(actor, taken, lastText).catch(async (e: unknown) => {
        if (!(e instanceof RemoteError && e.body.code === 'not_found')) throw e;
        if (named !== null)
          throw new ApiError(
            'not_found',
            `no conversation of yours has the id ${named.id} (chat conversations only: a job's run takes no messages)`,
            named.param,
          );
        // A matched conversation deleted since: the request opens a new one, as if none matched.
        if (matched === null && earlierTry === null) throw e;
        live?.close();
        taken = await this.take(actor, key, digest, await this.open(actor, agentId, earlier));
        live = req.stream === true ? this.listen(actor, taken.sessionId) : null;
        return this.submit(actor, taken, lastText);
      });
    } catch (e) {
      live?.close();
      throw e;
    }
    const sessionId = taken.sessionId;
    // Recorded once the session worker took the message, which checked the conversation is the caller's.
    if (!earlierTry) await this.conversations.record(scope, sessionId, req.model, earlier);
    const answer = new LiveAnswer(sent.message_id, new TurnAnswer(sent.message_id, { inboxUrl: this.inboxUrl }));
    return {
      sessionId,
      messageId: sent.message_id,
      steps: this.steps(actor, sessionId, taken.afterSeq, answer, live, signal),
      usage: answer.usage,
      complete: (content) =>
        this.conversations.record(scope, sessionId, req.model, [...all, { role: 'assistant', content }]),
      stop: async () => {
        await this.sessions.cancel(actor, sessionId);
      },
    };
  }

  /** The request recorded before its message is submitted: the conversation's last seq, a new message id. */
  private async take(actor: Actor, key: string, digest: string, sessionId: string): Promise<TakenRequest> {
    const head = await this.sessions.replay(actor, sessionId, undefined);
    const taken = { sessionId, clientMessageId: `openai-${randomUUID()}`, afterSeq: head.last_seq, digest };
    await this.requests.take(actor.userId, key, taken);
    return taken;
  }

  /** The message into the conversation (queued behind its running turn, if one runs), idempotent on its id. */
  private async submit(actor: Actor, taken: TakenRequest, content: string) {
    return callService('no session worker is available; retry shortly', () =>
      this.bus.call('session.submit', {
        actor,
        source: OPENAI_SOURCE,
        session_id: taken.sessionId,
        client_message_id: taken.clientMessageId,
        content,
        delivery: 'queue',
        is_synthetic: false,
      }),
    );
  }

  /**
   * A conversation id a client named, by header (first) or `metadata`: a UUID, else 404 naming
   * where it came from (like a conversation that is not the caller's).
   */
  private named(header: string | undefined, metadata: string | undefined): { id: string; param: string } | null {
    const given =
      header !== undefined
        ? { id: header, param: OPENAI_CONVERSATION_HEADER }
        : metadata !== undefined
          ? { id: metadata, param: `metadata.${OPENAI_CONVERSATION_METADATA}` }
          : null;
    if (given === null) return null;
    if (!OpenAiConversationId.safeParse(given.id).success)
      throw new ApiError('not_found', `no conversation of yours has the id ${JSON.stringify(given.id)}`, given.param);
    return given;
  }

  /** The `Idempotency-Key` header, if sent: 1 to 255 printable characters, else 400 naming it. */
  private idempotencyKey(value: string | undefined): string | undefined {
    if (value === undefined) return undefined;
    if (!OpenAiIdempotencyKey.safeParse(value).success)
      throw new ApiError('invalid_input', 'Idempotency-Key: 1 to 255 printable ASCII characters', 'Idempotency-Key');
    return value;
  }

  /** The conversation's live token deltas, kept until the answer reads them (at most EARLY_DELTAS_MAX). */
  private listen(actor: Actor, sessionId: string): LiveFeed {
    const feed = new LiveFeed();
    const sub = this.bus.subscribe(topicOf('ephemeralEvents', actor.userId, sessionId), (e) => {
      if (e.type === 'token_delta' && e.session_id === sessionId) feed.push(e);
    });
    feed.onClose(() => sub.unsubscribe());
    return feed;
  }

  private async open(actor: Actor, agentId: string, earlier: readonly StoredMessage[]): Promise<string> {
    const systemPrompt = earlier.filter((m) => m.role === 'system').map((m) => m.content);
    const history = earlier.flatMap((m) => (m.role === 'system' ? [] : [{ role: m.role, content: m.content }]));
    const r = await callService('no session worker is available; retry shortly', () =>
      this.bus.call('session.open', {
        actor,
        source: OPENAI_SOURCE,
        agent_id: agentId,
        system_prompt: systemPrompt,
        history,
      }),
    );
    return r.session_id;
  }

  /**
   * The answer's steps: the conversation's stored events after `afterSeq` (the truth), with the
   * live token deltas (`live`, a streamed answer) sent as they arrive; bounded by MAX_ANSWER_MS.
   */
  private async *steps(
    actor: Actor,
    sessionId: string,
    afterSeq: number,
    answer: LiveAnswer,
    live: LiveFeed | null,
    signal: AbortSignal,
  ): AsyncGenerator<AnswerStep> {
    const reading = new AbortController();
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(MAX_ANSWER_MS), reading.signal]);
    const ports: EventReaderPorts = {
      read: (after) => this.sessions.replay(actor, sessionId, after),
      doorbell: (ring) => {
        const sub = this.bus.subscribeForwarded(
          topicOf('sessionEvents', actor.userId, sessionId),
          readSessionEventEnvelope,
          ring,
        );
        return () => sub.unsubscribe();
      },
      sleep: (ms, wakeUp) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wakeUp(() => {
            clearTimeout(timer);
            resolve();
          });
        }),
    };
    // Steps from both sources, in the order they were made; the reader runs beside the consumer.
    const out: AnswerStep[] = [];
    // (assigned in callbacks: typed so that the compiler does not narrow it to null)
    let wake = null as (() => void) | null;
    const push = (steps: AnswerStep[]): void => {
      if (steps.length === 0) return;
      out.push(...steps);
      wake?.();
    };
    let finished = false;
    let failure = null as { error: unknown } | null;
    const reader = (async () => {
      try {
        for await (const item of sessionEvents(ports, afterSeq, bounded, POLL_MS)) {
          push(answer.read(item));
          if (answer.done) return;
        }
      } catch (error) {
        failure = { error };
      } finally {
        finished = true;
        wake?.();
      }
    })();
    live?.drain((d) => push(answer.live(d)));
    try {
      for (;;) {
        while (out.length > 0) {
          const step = out.shift() as AnswerStep;
          yield step;
          if (step.kind === 'end' || step.kind === 'failed') return;
        }
        if (finished) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
      if (failure) throw failure.error;
    } finally {
      live?.close();
      reading.abort();
      await reader;
    }
    if (signal.aborted) return;
    yield {
      kind: 'content',
      text: `\n\nThe agent is still working after ${MAX_ANSWER_MS / 60_000} minutes; its answer will be in the conversation (${sessionId}).`,
    };
    yield { kind: 'end', finish: 'stop' };
  }
}

/**
 * A conversation's live token deltas: kept (at most EARLY_DELTAS_MAX) until `drain` hands them
 * and every later one to the answer; `close` ends the subscription.
 */
class LiveFeed {
  private kept: LiveDelta[] = [];
  private sink: ((d: LiveDelta) => void) | null = null;
  private closers: Array<() => void> = [];
  private closed = false;

  push(d: LiveDelta): void {
    if (this.closed) return;
    if (this.sink) this.sink(d);
    else if (this.kept.length < EARLY_DELTAS_MAX) this.kept.push(d);
  }

  drain(sink: (d: LiveDelta) => void): void {
    this.sink = sink;
    const kept = this.kept;
    this.kept = [];
    for (const d of kept) sink(d);
  }

  onClose(f: () => void): void {
    this.closers.push(f);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sink = null;
    this.kept = [];
    for (const f of this.closers) f();
  }
}
