import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

type SimBody = { messages: Array<{ role: string; content: unknown }> };

/**
 * The OpenAI-compatible endpoint driven by the real `openai` npm SDK against the whole stack:
 * models, answers streamed and not, reasoning, continuation, a call that needs a human, aborts,
 * errors in OpenAI's shape.
 */
describe('OpenAI-compatible endpoint with the openai SDK', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let user: ApiClient;
  let token: string;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    user = await admin.createUser(`oai-${randomUUID()}@skald.test`, 'correct horse battery');
    const created = await user.post<{ token: string }>('/api/auth/tokens', { name: 'openai sdk' });
    token = created.body.token;
    client = new OpenAI({ apiKey: token, baseURL: `${stack.gatewayUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  const simBodies = async (marker: string): Promise<SimBody[]> =>
    (await sim.requests({ contains: marker })).map((r) => r.body as SimBody);

  it('lists the agents the user may use as models', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['skald/main', 'skald/researcher']));
    expect(ids).not.toContain('skald/tic');
  });

  it('answers without streaming: the final answer, its reasoning, the conversation in a header', async () => {
    const m = `ns-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ reasoning: 'Adding up.', content: 'Two plus two is 4.' }] });
    const { data, response } = await client.chat.completions
      .create({ model: 'skald/main', messages: [{ role: 'user', content: `2+2? ${m}` }] })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0].message.content).toBe('Two plus two is 4.');
    expect((data.choices[0].message as { reasoning_content?: string }).reasoning_content).toBe('Adding up.');
    expect(data.choices[0].finish_reason).toBe('stop');
    expect(data.usage?.total_tokens).toBeGreaterThan(0);
    expect(response.headers.get('x-skald-conversation')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('streams chunks: each round of the root agent, reasoning_content, no tool activity, [DONE]', async () => {
    const m = `st-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: 'Let me look.', tool_calls: [{ name: 'list_files', arguments: { path: '.' } }] },
        { reasoning: 'The workspace is empty.', content: 'There are no files yet.' },
      ],
    });
    const stream = await client.chat.completions.create({
      model: 'skald/main',
      messages: [{ role: 'user', content: `what files? ${m}` }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let reasoning = '';
    const finishes: (string | null)[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      const choice = chunk.choices[0];
      if (chunk.usage) usage = chunk.usage;
      if (!choice) continue;
      content += choice.delta.content ?? '';
      reasoning += (choice.delta as { reasoning_content?: string }).reasoning_content ?? '';
      if (choice.finish_reason) finishes.push(choice.finish_reason);
    }
    expect(content).toBe('Let me look.\n\nThere are no files yet.');
    expect(reasoning).toBe('The workspace is empty.');
    expect(finishes).toEqual(['stop']);
    expect(usage?.total_tokens).toBeGreaterThan(0);
    expect(content).not.toContain('list_files');
  });

  it('continues the conversation this token opened when the request extends its messages exactly', async () => {
    const m = `cont-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'Noted: blue.' }, { content: 'Your colour is blue.' }] });
    const first = [{ role: 'user' as const, content: `My colour is blue. ${m}` }];
    const a = await client.chat.completions.create({ model: 'skald/main', messages: first }).withResponse();
    const answer = a.data.choices[0].message.content ?? '';
    const b = await client.chat.completions
      .create({
        model: 'skald/main',
        messages: [...first, { role: 'assistant', content: answer }, { role: 'user', content: `Which colour? ${m}` }],
      })
      .withResponse();
    expect(b.data.choices[0].message.content).toBe('Your colour is blue.');
    const conversation = a.response.headers.get('x-skald-conversation');
    expect(b.response.headers.get('x-skald-conversation')).toBe(conversation);
    // The model saw the conversation's own history once (not a second copy from the request).
    const second = (await simBodies(m))[1];
    expect(second.messages.filter((x) => x.role === 'user').map((x) => x.content)).toEqual([
      `My colour is blue. ${m}`,
      `Which colour? ${m}`,
    ]);

    // A changed earlier message matches nothing: a new conversation whose history is the request's.
    await sim.script({ match: `edited ${m}`, replies: [{ content: 'A new one.' }] });
    const c = await client.chat.completions
      .create({
        model: 'skald/main',
        messages: [
          { role: 'system', content: 'Answer in one sentence.' },
          ...first,
          { role: 'assistant', content: `${answer} (edited)` },
          { role: 'user', content: `edited ${m}` },
        ],
      })
      .withResponse();
    expect(c.response.headers.get('x-skald-conversation')).not.toBe(conversation);
    const opened = (await sim.requests({ contains: `edited ${m}` }))[0].body as SimBody;
    expect(JSON.stringify(opened.messages.filter((x) => x.role === 'system'))).toContain('Answer in one sentence.');
    expect(opened.messages.filter((x) => x.role !== 'system').map((x) => x.content)).toEqual([
      `My colour is blue. ${m}`,
      `${answer} (edited)`,
      `edited ${m}`,
    ]);

    // Named by the header: the same conversation, whatever the request's earlier messages say.
    await sim.script({ match: `named ${m}`, replies: [{ content: 'Still blue.' }] });
    const d = await client.chat.completions
      .create(
        { model: 'skald/main', messages: [{ role: 'user', content: `named ${m}` }] },
        { headers: { 'x-skald-conversation': conversation! } },
      )
      .withResponse();
    expect(d.response.headers.get('x-skald-conversation')).toBe(conversation);
    expect(d.data.choices[0].message.content).toBe('Still blue.');

    // The same messages through another token of the same user: that token opened nothing, so a new one.
    const token2 = (await user.post<{ token: string }>('/api/auth/tokens', { name: 'second' })).body.token;
    const second2 = new OpenAI({ apiKey: token2, baseURL: `${stack.gatewayUrl}/v1`, maxRetries: 0 });
    await sim.script({ match: `other token ${m}`, replies: [{ content: 'Fresh.' }] });
    const e = await second2.chat.completions
      .create({
        model: 'skald/main',
        messages: [...first, { role: 'assistant', content: answer }, { role: 'user', content: `other token ${m}` }],
      })
      .withResponse();
    expect(e.response.headers.get('x-skald-conversation')).not.toBe(conversation);

    // Another user's conversation, named: 404 as if it did not exist.
    const other = await admin.createUser(`oai-o-${randomUUID()}@skald.test`, 'correct horse battery');
    const otherToken = (await other.post<{ token: string }>('/api/auth/tokens', { name: 'x' })).body.token;
    const intruder = new OpenAI({ apiKey: otherToken, baseURL: `${stack.gatewayUrl}/v1`, maxRetries: 0 });
    await expect(
      intruder.chat.completions.create(
        { model: 'skald/main', messages: [{ role: 'user', content: `steal ${m}` }] },
        { headers: { 'x-skald-conversation': conversation! } },
      ),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('a call that needs a human ends the answer naming where to approve; approving continues the conversation', async () => {
    const m = `appr-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'notes.md', content: 'hello' } }] },
        { content: 'Wrote notes.md.' },
      ],
    });
    const { data, response } = await client.chat.completions
      .create({ model: 'skald/main', messages: [{ role: 'user', content: `write notes ${m}` }] })
      .withResponse();
    const text = data.choices[0].message.content ?? '';
    expect(data.choices[0].finish_reason).toBe('stop');
    expect(text).toContain('notes.md');
    expect(text).toContain('/#inbox');
    const requestId = /\(request ([0-9a-f-]{36})\)/.exec(text)?.[1];
    expect(requestId).toBeDefined();
    const resolved = await user.post(`/api/inbox/approvals/${requestId}/resolve`, { action: 'approve' });
    expect(resolved.status).toBe(200);
    const sessionId = response.headers.get('x-skald-conversation')!;
    await until(
      'the approved turn to finish',
      async () => {
        const rows = await db.query<{ content: string }[]>(
          `SELECT content FROM chat_history WHERE session_id = $1 AND role = 'assistant' AND content = 'Wrote notes.md.'`,
          [sessionId],
        );
        return rows.length === 1;
      },
      30_000,
    );
  });

  it('a client abort stops the turn as the WS stop does', async () => {
    const m = `abort-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ fail: { kind: 'timeout' } }] });
    const ctl = new AbortController();
    const { data: stream, response } = await client.chat.completions
      .create(
        { model: 'skald/main', messages: [{ role: 'user', content: `wait forever ${m}` }], stream: true },
        { signal: ctl.signal },
      )
      .withResponse();
    const sessionId = response.headers.get('x-skald-conversation')!;
    const it = stream[Symbol.asyncIterator]();
    await it.next(); // the role chunk: the turn is under way
    await until('the model call', async () => (await simBodies(m)).length === 1, 30_000);
    ctl.abort();
    // The SDK ends an aborted stream (quietly or with an abort error); either way it yields no more.
    const after = await it.next().catch(() => ({ done: true as const, value: undefined }));
    expect(after.done).toBe(true);
    await until(
      'the stopped turn to end',
      async () => {
        const [row] = await db.query<{ turn_state: string }[]>(`SELECT turn_state FROM sessions WHERE id = $1`, [
          sessionId,
        ]);
        return row?.turn_state === 'finished';
      },
      30_000,
    );
    const events = await db.query<{ type: string }[]>(
      `SELECT type FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [sessionId],
    );
    expect(events.map((e) => e.type)).toContain('error');
  });

  it('a stop sequence ends the answer there and stops the turn', async () => {
    const m = `stop-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'one two THREE four' }] });
    const r = await client.chat.completions.create({
      model: 'skald/main',
      messages: [{ role: 'user', content: `count ${m}` }],
      stop: ['THREE'],
    });
    expect(r.choices[0].message.content).toBe('one two ');
    expect(r.choices[0].finish_reason).toBe('stop');
  });

  it('errors come in OpenAI’s shape: 401 without a valid key, 404 model_not_found, 400 naming the param', async () => {
    const anonymous = new OpenAI({ apiKey: 'sk-not-a-skald-token', baseURL: `${stack.gatewayUrl}/v1`, maxRetries: 0 });
    await expect(anonymous.models.list()).rejects.toMatchObject({
      status: 401,
      code: 'invalid_api_key',
      type: 'authentication_error',
    });
    await expect(
      client.chat.completions.create({ model: 'skald/tic', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    await expect(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    await expect(
      client.chat.completions.create({ model: 'skald/main', messages: [{ role: 'assistant', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 400, type: 'invalid_request_error', param: 'messages' });
  });
  it('a second client library, the AI SDK’s openai-compatible provider: generateText and streamText with reasoning', async () => {
    const skald = createOpenAICompatible({ name: 'skald', baseURL: `${stack.gatewayUrl}/v1`, apiKey: token });
    const m = `aisdk-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { reasoning: 'Counting letters.', content: 'Five.' },
        { content: 'Checking.', tool_calls: [{ name: 'list_files', arguments: { path: '.' } }] },
        { reasoning: 'Still five.', content: 'Five letters.' },
      ],
    });
    const one = await generateText({ model: skald('skald/main'), prompt: `letters in apple? ${m}`, maxRetries: 0 });
    expect(one.text).toBe('Five.');
    expect(one.reasoningText).toBe('Counting letters.');
    expect(one.finishReason).toBe('stop');

    const two = streamText({
      model: skald('skald/main'),
      messages: [
        { role: 'user', content: `letters in apple? ${m}` },
        { role: 'assistant', content: one.text },
        { role: 'user', content: `are you sure? ${m}` },
      ],
      maxRetries: 0,
    });
    let text = '';
    let reasoning = '';
    for await (const part of two.fullStream) {
      if (part.type === 'text-delta') text += part.text;
      if (part.type === 'reasoning-delta') reasoning += part.text;
      if (part.type === 'error') throw part.error;
    }
    expect(text).toBe('Checking.\n\nFive letters.');
    expect(reasoning).toBe('Still five.');
    expect(await two.finishReason).toBe('stop');
    // The second call continued the first one's conversation (the AI SDK sent the exact list back).
    const bodies = await simBodies(m);
    expect(bodies[1].messages.filter((x) => x.role === 'user').map((x) => x.content)).toEqual([
      `letters in apple? ${m}`,
      `are you sure? ${m}`,
    ]);
  });

  it('a restarted gateway continues the right conversation: the mapping is read from Postgres', async () => {
    const m = `restart-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'Remembered: 7.' }, { content: 'It was 7.' }] });
    const first = [{ role: 'user' as const, content: `remember 7 ${m}` }];
    const a = await client.chat.completions.create({ model: 'skald/main', messages: first }).withResponse();
    // A gateway that never served this conversation, and the one that did killed.
    const fresh = await stack.addReplica('gateway');
    const old = stack.byName('gateway')[0];
    old.child.kill('SIGKILL');
    const again = new OpenAI({ apiKey: token, baseURL: `${fresh.url}/v1`, maxRetries: 0 });
    const b = await again.chat.completions
      .create({
        model: 'skald/main',
        messages: [
          ...first,
          { role: 'assistant', content: a.data.choices[0].message.content ?? '' },
          { role: 'user', content: `what was it? ${m}` },
        ],
      })
      .withResponse();
    expect(b.response.headers.get('x-skald-conversation')).toBe(a.response.headers.get('x-skald-conversation'));
    expect(b.data.choices[0].message.content).toBe('It was 7.');
  });
});
