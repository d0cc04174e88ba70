import type { SessionEvent } from '@skald/contracts';
import type { ReadItem } from './session-event-reader';

/** What the answer to a request does next, read off the conversation's events. */
export type AnswerStep =
  | { kind: 'content'; text: string }
  | { kind: 'reasoning'; text: string }
  /** The answer is complete: the turn's final answer, a stop, or a call that needs a human. */
  | { kind: 'end'; finish: 'stop' | 'length' }
  /** The turn failed before it answered: an error in OpenAI's shape. */
  | { kind: 'failed'; status: number; code: string; message: string };

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
 * Folds a conversation's events after a request's message was submitted into the steps of its
 * answer. What counts is the root agent's work from the message's echo on (`user_message` with its
 * id): each round's text (`thinking` with tool calls, the final `done`) joined by a blank line,
 * and its reasoning; a sub-agent's work stays inside it (its result reaches the answer only as the
 * root agent says). A call that needs a human, a stop, a discarded message or a failed turn ends
 * the answer. Before the echo, only a human wait ends it (the conversation's earlier turn waits).
 */
export class TurnAnswer {
  private entered = false;
  private depth = 0;
  private wroteContent = false;
  private ended = false;
  readonly usage: Usage = { prompt_tokens: 0, completion_tokens: 0 };

  constructor(
    private readonly messageId: string,
    private readonly place: HumanPlace,
  ) {}

  get done(): boolean {
    return this.ended;
  }

  step(item: ReadItem): AnswerStep[] {
    if (this.ended) return [];
    if (item.kind === 'idle') {
      if (item.waiting === 'approval' || item.waiting === 'clarification') return this.end(this.human(null), 'stop');
      // The turn ended (finished or stopped) after the message entered, with no final answer.
      if (this.entered && !item.running) return this.end('', 'stop');
      return [];
    }
    return this.event(item.event);
  }

  private event(e: SessionEvent): AnswerStep[] {
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
        return [...this.reasoning(e.reasoning_content), ...this.content(e.content)];
      case 'done':
        if (!this.entered || this.depth > 0) return [];
        this.count(e);
        return [...this.reasoning(e.reasoning_content), ...this.end(e.content, 'stop')];
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
      case 'messages_superseded':
      case 'tool_start':
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

  private reasoning(text: string | undefined): AnswerStep[] {
    return text ? [{ kind: 'reasoning', text }] : [];
  }

  private content(text: string): AnswerStep[] {
    if (text === '') return [];
    const step: AnswerStep = { kind: 'content', text: this.wroteContent ? `\n\n${text}` : text };
    this.wroteContent = true;
    return [step];
  }

  private end(text: string, finish: 'stop' | 'length'): AnswerStep[] {
    const steps = this.content(text);
    this.ended = true;
    return [...steps, { kind: 'end', finish }];
  }
}
