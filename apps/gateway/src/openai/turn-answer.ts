import type { SessionEvent } from '@skald/contracts';
import type { ReadItem } from './session-event-reader';

/** What the answer to a request does next, as the client is sent it. */
export type AnswerStep =
  | { kind: 'content'; text: string }
  | { kind: 'reasoning'; text: string }
  /** The answer is complete: the turn's final answer, a stop, or a call that needs a human. */
  | { kind: 'end'; finish: 'stop' | 'length' }
  /** The turn failed before it answered: an error in OpenAI's shape. */
  | { kind: 'failed'; status: number; code: string; message: string };

/**
 * What the stored events say of the answer: a round of the root agent (`id`, its assistant message;
 * `content` '' when it says nothing), text of the answer's own (`note`: where to approve, a
 * timeout), or its end.
 */
export type StoredStep =
  | { kind: 'round'; id: string; content: string; reasoning: string }
  | { kind: 'note'; text: string }
  | Extract<AnswerStep, { kind: 'end' | 'failed' }>;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** Where a human answers what the agent asks (the web client's inbox). */
export interface HumanPlace {
  inboxUrl: string;
}

/**
 * The words that end an answer whose turn waits for a human: what is asked, and where to answer;
 * the conversation goes on from there once it is answered.
 */
export function humanNeededText(
  e: Extract<SessionEvent, { type: 'approval_required' | 'pending_write' | 'agent_question' }> | null,
  place: HumanPlace,
): string {
  const where = `Answer it in Skald's inbox: ${place.inboxUrl}`;
  const then = 'The conversation goes on once it is answered.';
  if (e === null) return `The agent is waiting for a human. ${where} — ${then}`;
  const id = `(request ${e.request_id})`;
  switch (e.type) {
    case 'approval_required':
      return `The agent needs approval to run \`${e.tool_name}\` ${id}. ${where} — ${then}`;
    case 'pending_write':
      return e.kind === 'command'
        ? `The agent needs approval to run \`${e.new_content.replace(/^\$ /, '')}\` ${id}. ${where} — ${then}`
        : `The agent needs approval to write \`${e.path ?? 'a file'}\` ${id}. ${where} — ${then}`;
    case 'agent_question':
      return `The agent asks: ${e.question} ${id}. ${where} — ${then}`;
    default: {
      const never: never = e;
      return String(never);
    }
  }
}

/**
 * Folds a conversation's events after a request's message was submitted into what they say of its
 * answer. What counts is the root agent's work from the message's echo on (`user_message` with its
 * id): each round (`thinking`, or the first `tool_start` of a round that said nothing; the final
 * `done`) with its text and reasoning; a
 * sub-agent's work stays inside it (its result reaches the answer only as the root agent says). A
 * call that needs a human, a stop, a discarded message or a failed turn ends the answer. Before the
 * echo, only a human wait ends it (the conversation's earlier turn waits).
 */
export class TurnAnswer {
  private entered = false;
  private depth = 0;
  private ended = false;
  /** The root agent's rounds told so far (a round's calls after its first say nothing new). */
  private readonly rounds = new Set<string>();
  readonly usage: Usage = { prompt_tokens: 0, completion_tokens: 0 };

  constructor(
    private readonly messageId: string,
    private readonly place: HumanPlace,
  ) {}

  get done(): boolean {
    return this.ended;
  }

  step(item: ReadItem): StoredStep[] {
    if (this.ended) return [];
    if (item.kind === 'idle') {
      if (item.waiting === 'approval' || item.waiting === 'clarification') return this.end(this.human(null), 'stop');
      // The turn ended (finished or stopped) after the message entered, with no final answer.
      if (this.entered && !item.running) return this.end('', 'stop');
      return [];
    }
    return this.event(item.event);
  }

  private event(e: SessionEvent): StoredStep[] {
    switch (e.type) {
      case 'user_message':
        if (e.message_id === this.messageId) this.entered = true;
        return [];
      case 'message_discarded':
        if (e.message_id !== this.messageId) return [];
        this.ended = true;
        return [{ kind: 'failed', status: 409, code: 'interrupted', message: 'the message was discarded by a stop' }];
      case 'approval_required':
      case 'pending_write':
      case 'agent_question':
        return this.end(this.human(e), 'stop');
      case 'agent_start':
        if (this.entered) this.depth++;
        return [];
      case 'agent_done':
        if (this.entered) this.depth = Math.max(0, this.depth - 1);
        return [];
      case 'thinking':
        if (!this.entered || this.depth > 0) return [];
        this.count(e);
        this.rounds.add(e.message_id);
        // A round that only called tools says nothing (its blank text is no part of the answer).
        return [this.round(e.message_id, e.content.trim() === '' ? '' : e.content, e.reasoning_content)];
      case 'done':
        if (!this.entered || this.depth > 0) return [];
        this.count(e);
        this.ended = true;
        return [this.round(e.message_id, e.content, e.reasoning_content), { kind: 'end', finish: 'stop' }];
      case 'truncated':
        return this.entered ? this.end('', 'length') : [];
      case 'error': {
        if (!this.entered) return [];
        if (e.code === 'interrupted') return this.end('', 'stop');
        this.ended = true;
        const status = e.code === 'llm_failed' ? 502 : e.code === 'rate_limited' ? 429 : 500;
        return [{ kind: 'failed', status, code: String(e.code), message: e.message }];
      }
      // Tool activity, files and model switches reach the client only as the agent's answer says.
      case 'tool_start':
        // A round that only called tools is stored with its first call (no `thinking`): it is over.
        if (!this.entered || this.depth > 0 || this.rounds.has(e.message_id)) return [];
        this.rounds.add(e.message_id);
        return [this.round(e.message_id, '', undefined)];
      case 'messages_superseded':
      case 'tool_done':
      case 'tool_error':
      case 'tool_cancelled':
      case 'tool_rejected':
      case 'file_changed':
      case 'open_file':
      case 'model_fallback':
      case 'llm_failed':
        return [];
      default: {
        const never: never = e;
        return never;
      }
    }
  }

  private human(e: Parameters<typeof humanNeededText>[0]): string {
    return humanNeededText(e, this.place);
  }

  private count(e: { input_tokens?: number; output_tokens?: number }): void {
    this.usage.prompt_tokens += e.input_tokens ?? 0;
    this.usage.completion_tokens += e.output_tokens ?? 0;
  }

  private round(id: string, content: string, reasoning: string | undefined): StoredStep {
    return { kind: 'round', id, content, reasoning: reasoning ?? '' };
  }

  private end(text: string, finish: 'stop' | 'length'): StoredStep[] {
    this.ended = true;
    return [...(text === '' ? [] : [{ kind: 'note' as const, text }]), { kind: 'end', finish }];
  }
}
