// What the gateway sends over the WS and how a client reads it. Imports types only: the web client
// takes this file into its bundle (as `@skald/contracts/server-frame`) and the bundle takes no zod.
import type { ConnectionEvent, EphemeralEvent, SessionEvent, SessionEventType, UserEvent } from './ws';

/**
 * The user events the gateway forwards as they are: every one but `new_session`, which switches
 * the sockets of its source to that session and reaches them as the connection event of that name.
 */
export type ForwardedUserEvent = Exclude<UserEvent, { type: 'new_session' }>;

/**
 * Every frame the gateway sends over the WS: a session event (with its `session_id` and `seq`), an
 * ephemeral event, a connection event, or a forwarded user event. `error` is both a session event
 * (a turn's error, with a `seq`) and a connection event (a refused frame, without one).
 */
export type ServerFrame = SessionEvent | EphemeralEvent | ConnectionEvent | ForwardedUserEvent;
export type ServerFrameType = ServerFrame['type'];

/** How a client recognises a frame of each type: the fields that route it are checked, the rest is the server's. */
type FrameShape<K extends ServerFrameType> = K extends SessionEventType
  ? K extends ConnectionEvent['type']
    ? 'session or connection'
    : 'session'
  : K extends EphemeralEvent['type']
    ? 'ephemeral'
    : 'other';

/**
 * Every frame type with its shape. The compiler asks for each type of the union (a missing or an
 * extra key does not compile) and fixes each value from the union it belongs to.
 */
const FRAME_SHAPES: { readonly [K in ServerFrameType]: FrameShape<K> } = {
  user_message: 'session',
  message_discarded: 'session',
  messages_superseded: 'session',
  thinking: 'session',
  tool_start: 'session',
  tool_done: 'session',
  tool_error: 'session',
  tool_cancelled: 'session',
  tool_rejected: 'session',
  pending_write: 'session',
  approval_required: 'session',
  agent_question: 'session',
  agent_start: 'session',
  agent_done: 'session',
  file_changed: 'session',
  open_file: 'session',
  model_fallback: 'session',
  llm_failed: 'session',
  done: 'session',
  truncated: 'session',
  error: 'session or connection',
  token_delta: 'ephemeral',
  tool_progress: 'ephemeral',
  turn_waiting: 'ephemeral',
  hello: 'other',
  ack: 'other',
  turn_running: 'other',
  command_result: 'other',
  client_selected: 'other',
  new_session: 'other',
  pong: 'other',
  approval_requested: 'other',
  approval_resolved: 'other',
  clarification_requested: 'other',
  clarification_resolved: 'other',
  task_update: 'other',
  notification: 'other',
};

/** Every `type` of a server frame (the keys of the table above, which the compiler keeps complete). */
export const SERVER_FRAME_TYPES = Object.keys(FRAME_SHAPES) as ServerFrameType[];

/** Whether a frame is an ephemeral event (`token_delta`, `tool_progress`, `turn_waiting`): live only, no `seq`. */
export function isEphemeralFrame(f: ServerFrame): f is EphemeralEvent {
  return FRAME_SHAPES[f.type] === 'ephemeral';
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
const isId = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * A parsed WS message as a server frame, or null when it is none this version knows: a JSON
 * object whose own `type` is a server frame type; a session event also has a `session_id` and a
 * positive integer `seq` (an `error` with a `seq` is the session's, one without is the
 * connection's), an ephemeral event a `session_id`. What orders and routes a frame is checked
 * here; its body is the server's, which sends only what its schemas accept. A type from a newer
 * server is null: the client drops it. Reads fields only; no zod.
 */
export function readServerFrame(value: unknown): ServerFrame | null {
  if (!isRecord(value) || !hasOwn(value, 'type')) return null;
  const type = value.type;
  if (typeof type !== 'string' || !hasOwn(FRAME_SHAPES, type)) return null;
  const shape: string = FRAME_SHAPES[type as ServerFrameType];
  const sequenced = shape === 'session' || (shape === 'session or connection' && hasOwn(value, 'seq'));
  if (sequenced && !(isSeq(value.seq) && isId(value.session_id))) return null;
  if (shape === 'ephemeral' && !isId(value.session_id)) return null;
  return value as ServerFrame;
}
