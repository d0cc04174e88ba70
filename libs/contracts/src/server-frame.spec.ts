import fc from 'fast-check';
import { z } from 'zod';
import { readServerFrame, SERVER_FRAME_TYPES, type ServerFrame } from './server-frame';
import {
  CONNECTION_EVENT_TYPES,
  EphemeralEventSchema,
  SESSION_EVENT_TYPES,
  SessionEventSchema,
  UserEventSchema,
} from './ws';

const RUNS = { seed: 36, numRuns: 5_000 };
const SID = '00000000-0000-4000-8000-000000000001';
const ID = '00000000-0000-4000-8000-000000000002';
const EPHEMERAL_TYPES = EphemeralEventSchema.options.map((o) => o.shape.type.value);
const USER_TYPES = UserEventSchema.options.map((o) => o.shape.type.value);
const KNOWN: ReadonlySet<string> = new Set(SERVER_FRAME_TYPES);
const SEQUENCED: ReadonlySet<string> = new Set<string>(SESSION_EVENT_TYPES);
const SESSION_BOUND: ReadonlySet<string> = new Set<string>([...SESSION_EVENT_TYPES, ...EPHEMERAL_TYPES]);

/** One well-formed frame of every type the gateway sends, each checked against its schema below. */
const EXAMPLES: { [K in ServerFrame['type']]: Extract<ServerFrame, { type: K }> } = {
  user_message: { type: 'user_message', session_id: SID, seq: 1, message_id: ID, content: 'hi' },
  message_discarded: { type: 'message_discarded', session_id: SID, seq: 1, message_id: ID, client_message_id: 'c' },
  messages_superseded: { type: 'messages_superseded', session_id: SID, seq: 1, from_message_id: ID },
  thinking: { type: 'thinking', session_id: SID, seq: 1, message_id: ID, content: '' },
  tool_start: {
    type: 'tool_start',
    session_id: SID,
    seq: 1,
    tool_call_id: ID,
    message_id: ID,
    name: 'read_file',
    arguments: { path: 'a' },
    label_short: 'read a',
    label_full: 'read /workspace/a',
  },
  tool_done: { type: 'tool_done', session_id: SID, seq: 1, tool_call_id: ID, result: 'ok', result_type: 'text' },
  tool_error: { type: 'tool_error', session_id: SID, seq: 1, tool_call_id: ID, error: 'no' },
  tool_cancelled: { type: 'tool_cancelled', session_id: SID, seq: 1, tool_call_id: ID },
  tool_rejected: { type: 'tool_rejected', session_id: SID, seq: 1, tool_call_id: ID, reason: 'no' },
  pending_write: {
    type: 'pending_write',
    session_id: SID,
    seq: 1,
    request_id: ID,
    tool_call_id: ID,
    kind: 'command',
    new_content: '$ ls',
  },
  approval_required: {
    type: 'approval_required',
    session_id: SID,
    seq: 1,
    request_id: ID,
    tool_call_id: ID,
    tool_name: 'mcp__gh__x',
    arguments: {},
  },
  agent_question: {
    type: 'agent_question',
    session_id: SID,
    seq: 1,
    request_id: ID,
    tool_call_id: ID,
    title: 't',
    question: 'q',
    suggested_answers: [],
  },
  agent_start: {
    type: 'agent_start',
    session_id: SID,
    seq: 1,
    stack_id: ID,
    parent_tool_call_id: ID,
    agent_id: 'a',
    parent_agent_id: 'p',
    depth: 1,
    prompt_preview: 'go',
  },
  agent_done: {
    type: 'agent_done',
    session_id: SID,
    seq: 1,
    stack_id: ID,
    parent_tool_call_id: ID,
    agent_id: 'a',
    parent_agent_id: 'p',
    depth: 1,
    result_preview: 'done',
  },
  file_changed: { type: 'file_changed', session_id: SID, seq: 1, path: '/workspace/a' },
  open_file: { type: 'open_file', session_id: SID, seq: 1, path: '/workspace/a' },
  model_fallback: { type: 'model_fallback', session_id: SID, seq: 1, from: 'a', to: 'b', reason: 'r' },
  llm_failed: { type: 'llm_failed', session_id: SID, seq: 1, tried: ['a'], last_error: 'e' },
  done: { type: 'done', session_id: SID, seq: 1, message_id: ID, stack_id: ID, content: 'answer' },
  truncated: { type: 'truncated', session_id: SID, seq: 1 },
  error: { type: 'error', session_id: SID, seq: 1, message: 'm', code: 'interrupted' },
  token_delta: {
    type: 'token_delta',
    session_id: SID,
    message_id: ID,
    depth: 0,
    kind: 'content',
    offset: 0,
    delta: 'x',
    after_seq: 1,
  },
  tool_progress: { type: 'tool_progress', session_id: SID, tool_call_id: ID, stream: 'stdout', chunk: 'x' },
  turn_waiting: {
    type: 'turn_waiting',
    session_id: SID,
    client_message_id: 'c',
    reason: 'concurrent_turns',
    limit: 1,
    message: 'waits',
  },
  hello: { type: 'hello', protocol: 1, server_version: '1', session_id: SID },
  ack: { type: 'ack', client_message_id: 'c', message_id: ID, duplicate: false },
  turn_running: { type: 'turn_running', running: false },
  command_result: { type: 'command_result', command: '/help', content: 'x' },
  client_selected: { type: 'client_selected', client: 'default' },
  pong: { type: 'pong' },
  new_session: { type: 'new_session', session_id: SID },
  approval_requested: {
    type: 'approval_requested',
    request_id: ID,
    tool_call_id: ID,
    session_id: SID,
    source: 'web',
    tool_name: 'x',
  },
  approval_resolved: {
    type: 'approval_resolved',
    request_id: ID,
    tool_call_id: ID,
    session_id: SID,
    source: 'web',
    approved: true,
  },
  clarification_requested: {
    type: 'clarification_requested',
    request_id: ID,
    tool_call_id: ID,
    session_id: SID,
    source: 'web',
    title: 't',
  },
  clarification_resolved: {
    type: 'clarification_resolved',
    request_id: ID,
    tool_call_id: ID,
    session_id: SID,
    source: 'web',
  },
  task_update: { type: 'task_update', job_id: ID, title: 't', agent_id: 'a', state: 'running', source: 'web' },
  notification: { type: 'notification', summary: 's', refs: {}, source: 'web' },
};

/** What the reader must accept of a JSON value, by the rules it states. */
function wellFormed(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  if (!Object.prototype.hasOwnProperty.call(o, 'type') || typeof o.type !== 'string' || !KNOWN.has(o.type))
    return false;
  const sequenced = SEQUENCED.has(o.type) && (o.type !== 'error' || Object.prototype.hasOwnProperty.call(o, 'seq'));
  const seqOk = typeof o.seq === 'number' && Number.isSafeInteger(o.seq) && o.seq >= 1;
  const sidOk = typeof o.session_id === 'string' && o.session_id.length > 0;
  if (sequenced && !(seqOk && sidOk)) return false;
  if (SESSION_BOUND.has(o.type) && !SEQUENCED.has(o.type) && !sidOk) return false;
  return true;
}

describe('ServerFrame: what the gateway sends', () => {
  it('names every session, ephemeral, connection and forwarded user event type, and nothing else', () => {
    const expected = new Set<string>([
      ...SESSION_EVENT_TYPES,
      ...EPHEMERAL_TYPES,
      ...CONNECTION_EVENT_TYPES,
      ...USER_TYPES.filter((t) => t !== 'new_session'),
    ]);
    expect([...KNOWN].sort()).toEqual([...expected].sort());
    expect(SERVER_FRAME_TYPES).toHaveLength(KNOWN.size);
  });

  it('the examples are well-formed by the schemas of their kind, and the reader takes each as it is', () => {
    const connection = new Set<string>(CONNECTION_EVENT_TYPES);
    for (const f of Object.values(EXAMPLES)) {
      const schema: z.ZodType = SEQUENCED.has(f.type)
        ? SessionEventSchema
        : EPHEMERAL_TYPES.includes(f.type as never)
          ? EphemeralEventSchema
          : connection.has(f.type)
            ? z.unknown()
            : UserEventSchema;
      expect({ type: f.type, ok: schema.safeParse(f).success }).toEqual({ type: f.type, ok: true });
      expect(readServerFrame(JSON.parse(JSON.stringify(f)))).toEqual(f);
    }
  });
});

describe('readServerFrame: hostile input', () => {
  it('never throws on any JSON value, and takes exactly the well-formed frames of known types', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const f = readServerFrame(v);
        expect(f === null ? false : f === v).toBe(wellFormed(v));
      }),
      RUNS,
    );
  });

  it('frame-shaped objects: a known or unknown type, any seq and session_id, extra keys', () => {
    const type = fc.oneof(
      fc.constantFrom(...SERVER_FRAME_TYPES),
      fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'history', 'resume', 'message'),
      fc.string(),
    );
    const anyValue = fc.oneof(
      fc.integer(),
      fc.double(),
      fc.constant(Number.MAX_SAFE_INTEGER + 1),
      fc.string(),
      fc.constant(null),
      fc.boolean(),
      fc.array(fc.integer(), { maxLength: 2 }),
    );
    const frame = fc.record(
      { type, seq: anyValue, session_id: fc.oneof(fc.constant(SID), anyValue), extra: fc.jsonValue() },
      { requiredKeys: ['type'] },
    );
    fc.assert(
      fc.property(frame, (raw) => {
        const v: unknown = JSON.parse(JSON.stringify(raw));
        expect(readServerFrame(v) !== null).toBe(wellFormed(v));
      }),
      RUNS,
    );
  });

  it('drops a type a newer server may add, and a session event without its place in the stream', () => {
    expect(readServerFrame({ type: 'tool_heartbeat', session_id: SID, seq: 3 })).toBeNull();
    expect(readServerFrame({ type: 'done', session_id: SID, content: 'x' })).toBeNull();
    expect(readServerFrame({ type: 'done', session_id: SID, seq: 0, content: 'x' })).toBeNull();
    expect(readServerFrame({ type: 'token_delta', delta: 'x' })).toBeNull();
    expect(readServerFrame(JSON.parse('{"__proto__": {"type": "hello"}}'))).toBeNull();
    expect(readServerFrame(Object.create({ type: 'hello' }))).toBeNull();
    // a connection error has no seq; a session error has one
    expect(readServerFrame({ type: 'error', code: 'invalid_input', message: 'm' })).not.toBeNull();
    expect(readServerFrame({ type: 'error', code: 'x', message: 'm', seq: 'one' })).toBeNull();
  });
});
