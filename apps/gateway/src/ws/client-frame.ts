import type WebSocket from 'ws';
import { ClientFrame, ClientMessageId, CLIENT_FRAME_TYPES, describeZodError, ErrorCode } from '@skald/contracts';
import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { decodeUtf8Strict, JSON_LIMITS, parseBoundedJson } from '@skald/service-kit/bounded-json';
import { ApiError } from '../http/api-error';

/** The `error` event about one frame (PROTOCOL.md): a code, a sentence, the offending field when there is one. */
export interface FrameError {
  code: ErrorCode;
  message: string;
  field?: string;
  /** The refused frame's own `client_message_id` (a `message`, `regenerate` or `edit`): its turn ends with this error. */
  client_message_id?: string;
}

/** The frame types that start a turn under a `client_message_id`. */
const TURN_FRAMES: ReadonlySet<string> = new Set(['message', 'regenerate', 'edit']);

/**
 * The `client_message_id` of a frame that starts a turn, when it is a valid one (a refused frame's
 * id is echoed only then, so nothing the schema refuses is sent back).
 */
function turnMessageId(value: object): string | undefined {
  const { type, client_message_id } = value as { type?: unknown; client_message_id?: unknown };
  if (typeof type !== 'string' || !TURN_FRAMES.has(type)) return undefined;
  return ClientMessageId.safeParse(client_message_id).success ? (client_message_id as string) : undefined;
}

export type ParsedFrame = { ok: true; frame: ClientFrame } | { ok: false; error: FrameError };

/** Longest piece of an unknown `type` echoed back. */
const MAX_ECHO_CHARS = 64;

const invalid = (message: string, field?: string): ParsedFrame => ({
  ok: false,
  error: { code: 'invalid_input', message, ...(field ? { field } : {}) },
});

/** The bytes of a frame, whatever shape `ws` delivered it in. */
export function frameBytes(data: WebSocket.RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.isBuffer(data) ? data : Buffer.from(data);
}

/**
 * A frame's bytes → a validated client frame, or the error event that answers it. Text and binary
 * frames alike must be UTF-8 JSON. Size, depth, key count, duplicate and prototype keys are
 * checked on the raw text before it is parsed; nothing here throws.
 */
export function parseClientFrame(data: WebSocket.RawData): ParsedFrame {
  const bytes = frameBytes(data);
  if (bytes.length > JSON_LIMITS.maxBytes)
    return { ok: false, error: { code: 'too_large', message: `frame exceeds ${JSON_LIMITS.maxBytes} bytes` } };
  const text = decodeUtf8Strict(bytes);
  if (text === null) return invalid('frame is not valid UTF-8');
  const json = parseBoundedJson(text);
  if (!json.ok) {
    if (json.problem.kind === 'not_json') return invalid('frame is not valid JSON');
    const { message, field } = json.problem;
    return invalid(field ? message : `frame ${message}`, field);
  }
  const value = json.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return invalid('a frame is one JSON object with a string "type"', 'type');
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string')
    return invalid(`type: expected a string, one of ${CLIENT_FRAME_TYPES.join(', ')}`, 'type');
  if (!(CLIENT_FRAME_TYPES as readonly string[]).includes(type)) {
    const shown = type.length > MAX_ECHO_CHARS ? `${type.slice(0, MAX_ECHO_CHARS)}…` : type;
    return invalid(`unknown frame type ${JSON.stringify(shown)}`, 'type');
  }
  const parsed = ClientFrame.safeParse(value);
  if (!parsed.success) {
    const { field, message } = describeZodError(parsed.error);
    const refused = invalid(message, field);
    const id = turnMessageId(value);
    if (!refused.ok && id !== undefined) refused.error.client_message_id = id;
    return refused;
  }
  return { ok: true, frame: parsed.data };
}

/**
 * What a frame handler's failure tells the client: a coded error as it is; a service that does not
 * answer as `unavailable`; anything else as `internal` (logged by the caller, never its text).
 */
export function frameErrorOf(e: unknown): { error: FrameError; unexpected: boolean } {
  if (e instanceof ApiError)
    return { error: { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) }, unexpected: false };
  if (e instanceof RemoteError) return { error: e.body, unexpected: false };
  if (e instanceof BusRequestError)
    return {
      error: { code: 'unavailable', message: 'the service is temporarily unavailable; retry shortly' },
      unexpected: false,
    };
  return { error: { code: 'internal', message: 'internal error' }, unexpected: true };
}
