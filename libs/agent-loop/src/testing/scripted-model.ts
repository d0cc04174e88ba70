import { LlmError } from '../ports';
import type {
  ClientSelection,
  LlmCallContext,
  LlmClientDescriptor,
  LlmDelta,
  LlmPort,
  LlmRefusal,
  LlmResponse,
  LlmUsage,
} from '../ports';
import type { WireMessage, WireTool } from '../types';

/** One scripted model reply. */
export interface ScriptStep {
  content?: string;
  reasoning?: string;
  /** `arguments`: an object (serialised) or the raw text. `id` defaults to `call_<n>`. */
  toolCalls?: { name: string; arguments?: Record<string, unknown> | string; id?: string }[];
  finishReason?: string;
  usage?: LlmUsage;
  model?: string;
  /** Streamed as content deltas before the reply. */
  deltas?: string[];
  /** Throw this instead of answering. */
  error?: LlmError | Error;
  /** Never answer until the signal aborts. */
  hang?: boolean;
  /** Run before answering (e.g. to abort a signal mid-call). */
  before?: () => void;
}

export interface RecordedLlmCall {
  client: string;
  messages: WireMessage[];
  tools: WireTool[];
  context?: LlmCallContext;
}

export type Responder = (request: RecordedLlmCall) => ScriptStep;

/**
 * The LLM port from a script: steps are consumed in order (or produced by a responder from the
 * request). Clients are tried in the configured order; a pinned client comes first.
 */
export class ScriptedModel implements LlmPort {
  readonly calls: RecordedLlmCall[] = [];
  readonly selections: ClientSelection[] = [];
  private readonly steps: ScriptStep[];
  private callCounter = 0;

  constructor(
    steps: ScriptStep[] | Responder,
    readonly clients: LlmClientDescriptor[] = [{ name: 'primary', cacheControl: false }],
    private readonly callIdPrefix = 'call_',
  ) {
    this.steps = Array.isArray(steps) ? [...steps] : [];
    this.responder = Array.isArray(steps) ? null : steps;
  }

  private readonly responder: Responder | null;

  /** Append steps to the script. */
  push(...steps: ScriptStep[]): void {
    this.steps.push(...steps);
  }

  /** When set, `admit` refuses every call with it (e.g. a used-up budget). */
  refusal: LlmRefusal | null = null;
  readonly admitted: Array<Omit<LlmCallContext, 'messageId' | 'purpose'>> = [];

  admit(context: Omit<LlmCallContext, 'messageId' | 'purpose'>): Promise<LlmRefusal | null> {
    this.admitted.push(context);
    return Promise.resolve(this.refusal);
  }

  get remaining(): number {
    return this.steps.length;
  }

  nextClient(selection: ClientSelection): LlmClientDescriptor | null {
    this.selections.push({ ...selection, tried: [...selection.tried] });
    const pinned = selection.pinned ? this.clients.find((c) => c.name === selection.pinned) : undefined;
    const order = pinned ? [pinned, ...this.clients.filter((c) => c !== pinned)] : this.clients;
    return order.find((c) => !selection.tried.includes(c.name)) ?? null;
  }

  async stream(
    client: LlmClientDescriptor,
    request: { messages: WireMessage[]; tools: WireTool[] },
    signal: AbortSignal,
    onDelta: (delta: LlmDelta) => void,
    context?: LlmCallContext,
  ): Promise<LlmResponse> {
    const recorded: RecordedLlmCall = {
      client: client.name,
      messages: structuredClone(request.messages),
      tools: structuredClone(request.tools),
      ...(context ? { context } : {}),
    };
    this.calls.push(recorded);
    const step = this.responder ? this.responder(recorded) : this.steps.shift();
    if (!step) throw new Error('scripted model: script exhausted');
    step.before?.();
    if (step.hang) {
      return new Promise<LlmResponse>((_resolve, reject) => {
        const fail = (): void => reject(new LlmError('aborted', false));
        if (signal.aborted) fail();
        else signal.addEventListener('abort', fail, { once: true });
      });
    }
    if (step.error) throw step.error;
    for (const d of step.deltas ?? []) onDelta({ kind: 'content', delta: d });
    const toolCalls = (step.toolCalls ?? []).map((tc) => ({
      id: tc.id ?? `${this.callIdPrefix}${++this.callCounter}`,
      name: tc.name,
      argumentsText: typeof tc.arguments === 'string' ? tc.arguments : JSON.stringify(tc.arguments ?? {}),
    }));
    return {
      content: step.content ?? '',
      reasoningContent: step.reasoning ?? null,
      toolCalls,
      usage: step.usage ?? null,
      ...(step.model ? { model: step.model } : {}),
      finishReason: step.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    };
  }
}
