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
  readSessionEventEnvelope,
  topicOf,
} from '@skald/contracts';
import { Bus, RemoteError } from '@skald/messaging';
import type { Principal } from '../auth/auth.service';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError, callService } from '../http/api-error';
import { SessionsGateway } from '../sessions/sessions.gateway';
import { OpenAiConversationsRepository, type StoredMessage } from './conversations.repository';
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

  /** Submits the request's last message to its conversation and starts reading the answer. */
  async start(
    principal: Principal,
    req: ChatCompletionRequest,
    namedId: string | undefined,
    signal: AbortSignal,
  ): Promise<RunningAnswer> {
    const { actor } = principal;
    const agentId = await this.agentOf(actor, req.model);
    const all = canonicalMessages(req.messages);
    const earlier = all.slice(0, -1);
    const lastText = messageText(req.messages[req.messages.length - 1]);
    const scope = { userId: actor.userId, apiTokenId: principal.apiTokenId };
    const named = this.named(namedId ?? req.metadata?.[OPENAI_CONVERSATION_METADATA]);
    const matched =
      named === null && principal.apiTokenId
        ? await this.conversations.matching({ ...scope, apiTokenId: principal.apiTokenId }, req.model, earlier)
        : null;
    let sessionId = named ?? matched ?? (await this.open(actor, agentId, earlier));
    const sent = await this.submit(actor, sessionId, lastText).catch(async (e: unknown) => {
      // A matched conversation deleted since: the request opens a new one, as if none matched.
      if (!(matched !== null && e instanceof RemoteError && e.body.code === 'not_found')) throw e;
      sessionId = await this.open(actor, agentId, earlier);
      return this.submit(actor, sessionId, lastText);
    });
    // Recorded once the session worker took the message, which checked the conversation is the caller's.
    await this.conversations.record(scope, sessionId, req.model, earlier);
    const answer = new TurnAnswer(sent.message_id, { inboxUrl: this.inboxUrl });
    return {
      sessionId,
      messageId: sent.message_id,
      steps: this.steps(actor, sessionId, sent.afterSeq, answer, signal),
      usage: answer.usage,
      complete: (content) =>
        this.conversations.record(scope, sessionId, req.model, [...all, { role: 'assistant', content }]),
      stop: async () => {
        await this.sessions.cancel(actor, sessionId);
      },
    };
  }

  /**
   * The message into the conversation (queued behind its running turn, if one runs), and the seq
   * its answer is read after: the conversation's last seq before the message was taken.
   */
  private async submit(actor: Actor, sessionId: string, content: string) {
    const head = await this.sessions.replay(actor, sessionId, undefined);
    const r = await callService('no session worker is available; retry shortly', () =>
      this.bus.call('session.submit', {
        actor,
        source: OPENAI_SOURCE,
        session_id: sessionId,
        client_message_id: `openai-${randomUUID()}`,
        content,
        delivery: 'queue',
        is_synthetic: false,
      }),
    );
    return { message_id: r.message_id, afterSeq: head.last_seq };
  }

  /** A conversation id a client named: a UUID (else 404, like a foreign one). */
  private named(id: string | undefined): string | null {
    if (id === undefined) return null;
    if (!OpenAiConversationId.safeParse(id).success) throw new ApiError('not_found', 'conversation not found');
    return id;
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

  /** The answer's steps, read from the conversation's stored events after `afterSeq`; bounded by MAX_ANSWER_MS. */
  private async *steps(
    actor: Actor,
    sessionId: string,
    afterSeq: number,
    answer: TurnAnswer,
    signal: AbortSignal,
  ): AsyncGenerator<AnswerStep> {
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(MAX_ANSWER_MS)]);
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
    for await (const item of sessionEvents(ports, afterSeq, bounded, POLL_MS)) {
      for (const step of answer.step(item)) yield step;
      if (answer.done) return;
    }
    if (signal.aborted) return;
    yield {
      kind: 'content',
      text: `\n\nThe agent is still working after ${MAX_ANSWER_MS / 60_000} minutes; its answer will be in the conversation (${sessionId}).`,
    };
    yield { kind: 'end', finish: 'stop' };
  }
}
