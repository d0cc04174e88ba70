import fc from 'fast-check';
import { ApiError } from '../http/api-error';
import { toOpenAiError } from './openai-error';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Principal } from '../auth/auth.service';
import type { GatewayConfig } from '../config';
import { ChatCompletionsService, isSdkRetry, parseChatRequest } from './chat-completions.service';
import type { TakenRequest } from './requests.repository';

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

describe('which conversation a request goes to', () => {
  const USER = '00000000-0000-4000-8000-000000000001';
  const NAMED = '00000000-0000-4000-8000-0000000000a1';
  const MATCHED = '00000000-0000-4000-8000-0000000000a2';
  const OPENED = '00000000-0000-4000-8000-0000000000a3';
  const TOKEN = '00000000-0000-4000-8000-0000000000f1';

  /** The service over fakes: which bus calls it made, and where the message went. */
  function service(opts: { matched?: string | null; gone?: string[] } = {}) {
    const calls: Array<{ subject: string; body: Record<string, unknown> }> = [];
    const recorded: Array<{ sessionId: string; messages: unknown }> = [];
    const bus = {
      call: (subject: string, body: Record<string, unknown>) => {
        calls.push({ subject, body });
        if (subject === 'agents.get') return Promise.resolve({ type: 'chat' });
        if (subject === 'session.open') return Promise.resolve({ session_id: OPENED });
        if (subject === 'session.submit') {
          if (opts.gone?.includes(String(body.session_id)))
            return Promise.reject(new RemoteError({ code: 'not_found', message: 'session not found' }));
          return Promise.resolve({ message_id: '00000000-0000-4000-8000-0000000000b1' });
        }
        return Promise.reject(new Error(`unexpected ${subject}`));
      },
      subscribeForwarded: () => ({ unsubscribe: () => undefined }),
    };
    const sessions = { replay: () => Promise.resolve({ events: [], last_seq: 4, running: false }) };
    const conversations = {
      matching: (scope: { apiTokenId: string }) =>
        Promise.resolve(scope.apiTokenId === TOKEN ? (opts.matched ?? null) : null),
      record: (_s: unknown, sessionId: string, _m: string, messages: unknown) => {
        recorded.push({ sessionId, messages });
        return Promise.resolve();
      },
    };
    const taken = new Map<string, TakenRequest>();
    const requests = {
      find: (_u: string, key: string) => Promise.resolve(taken.get(key) ?? null),
      take: (_u: string, key: string, t: TakenRequest) => {
        taken.set(key, t);
        return Promise.resolve();
      },
    };
    const config = { HOST: '127.0.0.1', PORT: 8080 } as GatewayConfig;
    const svc = new ChatCompletionsService(
      bus as never,
      sessions as never,
      conversations as never,
      requests as never,
      config,
    );
    return { svc, calls, recorded, taken };
  }
  const principal = (apiTokenId: string | null): Principal => ({
    actor: { userId: USER, role: 'user' },
    expiresAt: null,
    tokenVersion: 1,
    apiTokenId,
    loginSessionId: null,
  });
  const req = parseChatRequest({
    model: 'skald/main',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ],
  });
  const submittedTo = (calls: Array<{ subject: string; body: Record<string, unknown> }>) =>
    calls.filter((c) => c.subject === 'session.submit').map((c) => c.body.session_id);

  it('a named conversation first, then this token’s exact match, then a new one with the history', async () => {
    const signal = new AbortController().signal;
    const named = service({ matched: MATCHED });
    expect((await named.svc.start(principal(TOKEN), req, { conversation: NAMED }, signal)).sessionId).toBe(NAMED);
    expect(submittedTo(named.calls)).toEqual([NAMED]);

    const matched = service({ matched: MATCHED });
    expect((await matched.svc.start(principal(TOKEN), req, {}, signal)).sessionId).toBe(MATCHED);
    expect(matched.calls.some((c) => c.subject === 'session.open')).toBe(false);
    expect(matched.calls.find((c) => c.subject === 'session.submit')?.body).toMatchObject({
      content: 'c',
      delivery: 'queue',
      source: 'openai',
    });

    const fresh = service({ matched: null });
    expect((await fresh.svc.start(principal(TOKEN), req, {}, signal)).sessionId).toBe(OPENED);
    expect(fresh.calls.find((c) => c.subject === 'session.open')?.body).toMatchObject({
      agent_id: 'main',
      system_prompt: ['be brief'],
      history: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
      ],
    });
    // Recorded only after the worker took the message (it checks the conversation is the caller's).
    expect(fresh.recorded.map((r) => r.sessionId)).toEqual([OPENED]);
  });

  it('a login JWT never continues by messages; a matched conversation deleted since opens a new one', async () => {
    const signal = new AbortController().signal;
    const jwt = service({ matched: MATCHED });
    expect((await jwt.svc.start(principal(null), req, {}, signal)).sessionId).toBe(OPENED);
    const gone = service({ matched: MATCHED, gone: [MATCHED] });
    expect((await gone.svc.start(principal(TOKEN), req, {}, signal)).sessionId).toBe(OPENED);
    expect(submittedTo(gone.calls)).toEqual([MATCHED, OPENED]);
    // A named one that is not the caller's is not replaced by a new one: 404.
    // Nor is a job's run (the worker refuses it as it refuses another user's): 404 naming the header or field.
    const foreign = service({ gone: [NAMED] });
    await expect(foreign.svc.start(principal(TOKEN), req, { conversation: NAMED }, signal)).rejects.toMatchObject({
      status: 404,
      field: 'x-skald-conversation',
    });
    const viaMetadata = parseChatRequest({ ...req, metadata: { skald_conversation: NAMED } });
    await expect(foreign.svc.start(principal(TOKEN), viaMetadata, {}, signal)).rejects.toMatchObject({
      status: 404,
      field: 'metadata.skald_conversation',
    });
    expect(foreign.recorded).toEqual([]);
    await expect(
      foreign.svc.start(principal(TOKEN), req, { conversation: 'not-a-uuid' }, signal),
    ).rejects.toMatchObject({ status: 404, field: 'x-skald-conversation' });
  });
});

describe('a retried request', () => {
  const USER = '00000000-0000-4000-8000-000000000001';
  const TOKEN = '00000000-0000-4000-8000-0000000000f1';

  /** The service over fakes that keep what the worker and the requests table would. */
  function service() {
    const submits: Array<Record<string, unknown>> = [];
    const opened: string[] = [];
    const byClientId = new Map<string, string>();
    const bus = {
      call: (subject: string, body: Record<string, unknown>) => {
        if (subject === 'agents.get') return Promise.resolve({ type: 'chat' });
        if (subject === 'session.open') {
          const id = `00000000-0000-4000-8000-${String(opened.length + 1).padStart(12, '0')}`;
          opened.push(id);
          return Promise.resolve({ session_id: id });
        }
        if (subject === 'session.submit') {
          submits.push(body);
          const cmid = String(body.client_message_id);
          // The worker's submit is idempotent on the client's message id.
          if (!byClientId.has(cmid))
            byClientId.set(cmid, `00000000-0000-4000-8000-${String(byClientId.size + 1).padStart(12, 'b')}`);
          return Promise.resolve({ message_id: byClientId.get(cmid) });
        }
        return Promise.reject(new Error(`unexpected ${subject}`));
      },
      subscribe: () => ({ unsubscribe: () => undefined }),
      subscribeForwarded: () => ({ unsubscribe: () => undefined }),
    };
    let seq = 10;
    const sessions = { replay: () => Promise.resolve({ events: [], last_seq: seq++, running: false }) };
    const conversations = { matching: () => Promise.resolve(null), record: () => Promise.resolve() };
    const taken = new Map<string, TakenRequest>();
    const requests = {
      find: (_u: string, key: string) => Promise.resolve(taken.get(key) ?? null),
      take: (_u: string, key: string, t: TakenRequest) => {
        taken.set(key, t);
        return Promise.resolve();
      },
    };
    const config = { HOST: '127.0.0.1', PORT: 8080 } as GatewayConfig;
    const svc = new ChatCompletionsService(
      bus as never,
      sessions as never,
      conversations as never,
      requests as never,
      config,
    );
    return { svc, submits, opened };
  }
  const principal: Principal = {
    actor: { userId: USER, role: 'user' },
    expiresAt: null,
    tokenVersion: 1,
    apiTokenId: TOKEN,
    loginSessionId: null,
  };
  const body = (text: string) => parseChatRequest({ model: 'skald/main', messages: [{ role: 'user', content: text }] });
  const signal = new AbortController().signal;

  it('the SDK’s retry of the same request submits the same message to the same conversation; a new request does not', async () => {
    const s = service();
    const first = await s.svc.start(principal, body('hi'), { retryCount: '0' }, signal);
    const retry = await s.svc.start(principal, body('hi'), { retryCount: '1' }, signal);
    const again = await s.svc.start(principal, body('hi'), {}, signal);
    expect(retry.sessionId).toBe(first.sessionId);
    expect(retry.messageId).toBe(first.messageId);
    expect(s.submits[1].client_message_id).toBe(s.submits[0].client_message_id);
    // Not a retry: a new turn (a new message), in this fake a new conversation too.
    expect(again.messageId).not.toBe(first.messageId);
    // A retry attaches to the latest request like it; a retry of another request does not.
    const retryOfAgain = await s.svc.start(principal, body('hi'), { retryCount: '2' }, signal);
    expect(retryOfAgain.messageId).toBe(again.messageId);
    const other = await s.svc.start(principal, body('hello'), { retryCount: '1' }, signal);
    expect([first.messageId, again.messageId]).not.toContain(other.messageId);
    expect(s.opened).toHaveLength(3);
  });

  it('an Idempotency-Key makes requests one; a key sent with another request is a 400 naming it', async () => {
    const s = service();
    const a = await s.svc.start(principal, body('hi'), { idempotencyKey: 'k-1' }, signal);
    const b = await s.svc.start(principal, body('hi'), { idempotencyKey: 'k-1' }, signal);
    const c = await s.svc.start(principal, body('hi'), { idempotencyKey: 'k-2' }, signal);
    expect(b.messageId).toBe(a.messageId);
    expect(c.messageId).not.toBe(a.messageId);
    await expect(s.svc.start(principal, body('other'), { idempotencyKey: 'k-1' }, signal)).rejects.toMatchObject({
      status: 400,
      field: 'Idempotency-Key',
    });
    for (const bad of ['', ' lead', 'x'.repeat(256), 'tab\there', 'é'])
      await expect(s.svc.start(principal, body('hi'), { idempotencyKey: bad }, signal)).rejects.toMatchObject({
        status: 400,
        field: 'Idempotency-Key',
      });
  });

  it('takes any Idempotency-Key of 1 to 255 printable ASCII characters, and answers any other with a 400 naming it (seeded)', async () => {
    const s = service();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 20 })),
        async (k) => {
          const ok = /^[\x21-\x7e][\x20-\x7e]{0,254}$/.test(k);
          const r = await s.svc.start(principal, body(`hi ${k.length}`), { idempotencyKey: k }, signal).then(
            () => 'taken',
            (e: unknown) =>
              e instanceof ApiError && e.status === 400 && e.field === 'Idempotency-Key' ? 'refused' : e,
          );
          // A key taken before with another body is refused too; a valid key is never a crash.
          if (!ok) expect(r).toBe('refused');
          else expect(['taken', 'refused']).toContain(r);
        },
      ),
      { seed, numRuns: 2000 },
    );
  });

  it('reads a retry count as the SDKs send it, and nothing else as a retry (seeded)', () => {
    expect(['1', '2', '10'].map(isSdkRetry)).toEqual([true, true, true]);
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.constant(undefined)), (v) => {
        expect(isSdkRetry(v)).toBe(v !== undefined && /^[1-9][0-9]{0,3}$/.test(v.trim()));
      }),
      { seed, numRuns: 2000 },
    );
    expect(['0', '', 'one', '-1', '01', '99999'].some(isSdkRetry)).toBe(false);
  });
});
