import type { SimChatRequest, SimMatchIn, SimReply, SimScriptInfo, SimScriptInput } from './sim-types';

interface StoredScript {
  id: string;
  match: string | null;
  matchIn: SimMatchIn;
  model: string | null;
  replies: SimReply[];
  consumed: number;
  repeatLast: boolean;
}

export interface SimScriptPick {
  scriptId: string;
  reply: SimReply;
}

/**
 * The registered scripts. A request is answered by the first registered keyed script (one with a
 * `match` marker) that matches it and still has a reply; failing that, by the first default
 * script (no marker) that matches and has one. Keyed scripts are what keep concurrent tests
 * apart: each puts its own marker in the conversation.
 */
export class SimScriptStore {
  private readonly scripts: StoredScript[] = [];
  private nextId = 1;

  add(input: SimScriptInput): string {
    assertScriptInput(input);
    const id = `script_${this.nextId++}`;
    this.scripts.push({
      id,
      match: input.match ?? null,
      matchIn: input.matchIn ?? 'any',
      model: input.model ?? null,
      replies: [...input.replies],
      consumed: 0,
      repeatLast: input.repeatLast ?? false,
    });
    return id;
  }

  remove(id: string): boolean {
    const index = this.scripts.findIndex((s) => s.id === id);
    if (index < 0) return false;
    this.scripts.splice(index, 1);
    return true;
  }

  clear(): void {
    this.scripts.length = 0;
  }

  list(): SimScriptInfo[] {
    return this.scripts.map((s) => ({
      id: s.id,
      match: s.match,
      matchIn: s.matchIn,
      model: s.model,
      total: s.replies.length,
      consumed: s.consumed,
      remaining: Math.max(0, s.replies.length - s.consumed),
      repeatLast: s.repeatLast,
    }));
  }

  /** Takes the next reply for this request, or null when nothing scripted applies. */
  take(request: SimChatRequest): SimScriptPick | null {
    const usable = (s: StoredScript): boolean =>
      (s.consumed < s.replies.length || (s.repeatLast && s.replies.length > 0)) &&
      (s.model === null || s.model === request.model);
    const keyed = this.scripts.find((s) => s.match !== null && usable(s) && matches(s, request));
    const script = keyed ?? this.scripts.find((s) => s.match === null && usable(s));
    if (!script) return null;
    const index = Math.min(script.consumed, script.replies.length - 1);
    script.consumed += 1;
    return { scriptId: script.id, reply: script.replies[index] };
  }
}

function matches(script: StoredScript, request: SimChatRequest): boolean {
  const marker = script.match as string;
  if (script.matchIn === 'last_user') return lastUserText(request).includes(marker);
  return request.messages.some((m) => messageText(m.content).includes(marker));
}

export function lastUserText(request: SimChatRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i];
    if (message.role === 'user') return messageText(message.content);
  }
  return '';
}

/** The text of a message content: the string itself, or its text parts joined by newlines. */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) =>
      typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
        ? (part as { text: string }).text
        : '',
    )
    .join('\n');
}

function assertScriptInput(input: SimScriptInput): void {
  if (typeof input !== 'object' || input === null) throw new SimScriptError('a script must be an object');
  if (!Array.isArray(input.replies)) throw new SimScriptError("a script needs 'replies' (an array)");
  if (input.match !== undefined && (typeof input.match !== 'string' || input.match === '')) {
    throw new SimScriptError("'match' must be a non-empty string");
  }
  if (input.matchIn !== undefined && input.matchIn !== 'any' && input.matchIn !== 'last_user') {
    throw new SimScriptError("'matchIn' must be 'any' or 'last_user'");
  }
  if (input.model !== undefined && typeof input.model !== 'string')
    throw new SimScriptError("'model' must be a string");
  input.replies.forEach((reply, i) => {
    if (typeof reply === 'function') return;
    if (typeof reply !== 'object' || reply === null) throw new SimScriptError(`replies[${i}] must be an object`);
    if ('fail' in reply) {
      const kinds = ['http_error', 'timeout', 'drop', 'stream_error'];
      if (typeof reply.fail !== 'object' || reply.fail === null || !kinds.includes(reply.fail.kind)) {
        throw new SimScriptError(`replies[${i}].fail.kind must be one of ${kinds.join(', ')}`);
      }
      if (
        reply.fail.kind === 'http_error' &&
        !(Number.isInteger(reply.fail.status) && reply.fail.status >= 400 && reply.fail.status <= 599)
      ) {
        throw new SimScriptError(`replies[${i}].fail.status must be an HTTP error status (400-599)`);
      }
      return;
    }
    for (const [j, call] of (reply.tool_calls ?? []).entries()) {
      if (typeof call?.name !== 'string' || call.name === '')
        throw new SimScriptError(`replies[${i}].tool_calls[${j}].name must be a non-empty string`);
      if (typeof call.arguments !== 'string' && (typeof call.arguments !== 'object' || call.arguments === null)) {
        throw new SimScriptError(`replies[${i}].tool_calls[${j}].arguments must be an object or a string`);
      }
    }
  });
}

export class SimScriptError extends Error {
  readonly code = 'sim_invalid_script';
}
