import fc from 'fast-check';
import { ApiError } from '../http/api-error';
import { toOpenAiError } from './openai-error';
import { parseChatRequest } from './chat-completions.service';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

/** A request body's verdict: parsed, or a 400 in OpenAI's shape naming what is wrong. Never anything else. */
function verdict(body: unknown): { ok: true } | { ok: false; status: number; message: string; param: string | null } {
  try {
    parseChatRequest(body);
    return { ok: true };
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    const b = toOpenAiError(e.status, { code: e.code, message: e.message, field: e.field });
    return { ok: false, status: e.status, message: b.error.message, param: b.error.param };
  }
}

const user = (content: unknown) => ({ role: 'user', content });

describe('the Chat Completions request parser', () => {
  it('takes what OpenAI clients send, the sampling fields and other vendors’ fields left unused', () => {
    expect(
      verdict({
        model: 'skald/main',
        messages: [{ role: 'system', content: 'be brief' }, user([{ type: 'text', text: 'hi' }])],
        temperature: 0.2,
        max_tokens: 100,
        stream: true,
        stream_options: { include_usage: true },
        stop: ['\n\n'],
        n: 1,
        user: 'u1',
        metadata: { skald_conversation: 'x' },
        provider: { order: ['a'] },
      }),
    ).toEqual({ ok: true });
  });

  it.each([
    [{ model: 'skald/main', messages: [] }, 'messages'],
    [{ model: 'skald/main', messages: [user('a'), { role: 'assistant', content: 'b' }] }, 'messages'],
    [{ model: 'skald/main', messages: [{ role: 'tool', content: 'x', tool_call_id: 'c' }] }, 'messages.0.role'],
    [{ model: 'skald/main', messages: [user('a')], n: 2 }, 'n'],
    [{ model: 'skald/main', messages: [user('a')], tools: [{ type: 'function' }] }, 'tools'],
    [{ model: 'skald/main', messages: [user([{ type: 'image_url', image_url: { url: 'x' } }])] }, 'messages.0.content'],
    [{ model: '', messages: [user('a')] }, 'model'],
    [{ messages: [user('a')] }, 'model'],
    [{ model: 'skald/main', messages: [user('a')], stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    // A system message becomes a stored prompt part: no NUL, no lone surrogate, at most 10,000 characters.
    [{ model: 'skald/main', messages: [{ role: 'system', content: 'a\u0000b' }, user('a')] }, 'messages.0.content'],
    [
      { model: 'skald/main', messages: [user('a'), { role: 'developer', content: '\ud800' }, user('b')] },
      'messages.1.content',
    ],
    [
      { model: 'skald/main', messages: [{ role: 'system', content: 'x'.repeat(10_001) }, user('a')] },
      'messages.0.content',
    ],
    [
      {
        model: 'skald/main',
        messages: [...Array.from({ length: 21 }, () => ({ role: 'system', content: 's' })), user('a')],
      },
      'messages',
    ],
  ])('refuses %j naming %s', (body, param) => {
    const v = verdict(body);
    expect(v).toMatchObject({ ok: false, status: 400, param });
  });

  it('refuses a body that is not an object with a sentence saying so', () => {
    for (const body of [undefined, null, 'text', 42, [user('a')]]) {
      const v = verdict(body);
      expect(v).toMatchObject({ ok: false, status: 400 });
      expect(!v.ok && v.message).toMatch(/JSON object/);
    }
  });

  it('answers any generated hostile body with a parse or a clear 400, never a throw of another kind', () => {
    const text = fc.oneof(
      fc.string(),
      fc.constantFrom('\u0000', '\ud800', '\u2028', '\ufeff', '\u202e', '__proto__', 'constructor'),
    );
    const anything = fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true });
    const message = fc.record(
      {
        role: fc.oneof(fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'function'), text),
        content: fc.oneof(
          text,
          fc.array(fc.record({ type: fc.oneof(fc.constant('text'), text), text }), { maxLength: 4 }),
          anything,
        ),
        tool_calls: fc.oneof(fc.constant(undefined), fc.array(anything, { maxLength: 2 })),
        name: fc.oneof(fc.constant(undefined), text),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      anything,
      fc.record(
        {
          model: fc.oneof(fc.constant('skald/main'), text, anything),
          messages: fc.oneof(fc.array(message, { maxLength: 6 }), anything),
          stream: fc.oneof(fc.boolean(), anything),
          stop: fc.oneof(text, fc.array(text, { maxLength: 6 }), anything),
          n: fc.oneof(fc.integer(), anything),
          metadata: fc.oneof(fc.dictionary(text, text, { maxKeys: 4 }), anything),
          tools: anything,
          response_format: anything,
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(body, (b) => {
        const v = verdict(b);
        if (!v.ok) {
          expect(v.status).toBe(400);
          expect(v.message.length).toBeGreaterThan(0);
          expect(v.message).not.toMatch(/\n\s+at /);
        }
      }),
      { seed, numRuns: 5000 },
    );
  });
});
