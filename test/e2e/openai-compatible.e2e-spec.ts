import { randomUUID } from 'node:crypto';
import http from 'node:http';
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

  it('streams the root agent’s tokens as they come, several chunks a round, ending with the non-streamed answer', async () => {
    const m = `tok-${randomUUID()}`;
    const replies = [
      {
        content: 'Let me look at the files first.',
        tool_calls: [{ name: 'list_files', arguments: { path: '.' } }],
        chunkSize: 4,
        latency: { betweenChunksMs: 15 },
      },
      {
        reasoning: 'The workspace holds nothing yet.',
        content: 'There are no files in the workspace yet.',
        chunkSize: 4,
        latency: { betweenChunksMs: 15 },
      },
    ];
    await sim.script({ match: `streamed ${m}`, replies });
    await sim.script({ match: `whole ${m}`, replies });
    const stream = await client.chat.completions.create({
      model: 'skald/main',
      messages: [{ role: 'user', content: `streamed ${m}` }],
      stream: true,
    });
    const pieces: string[] = [];
    let reasoning = '';
    let reasoningChunks = 0;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      if (delta?.content) pieces.push(delta.content);
      if (delta?.reasoning_content) {
        reasoning += delta.reasoning_content;
        reasoningChunks++;
      }
    }
    const whole = await client.chat.completions.create({
      model: 'skald/main',
      messages: [{ role: 'user', content: `whole ${m}` }],
    });
    const content = pieces.join('');
    expect(content).toBe('Let me look at the files first.\n\nThere are no files in the workspace yet.');
    expect(content).toBe(whole.choices[0].message.content);
    expect(reasoning).toBe((whole.choices[0].message as { reasoning_content?: string }).reasoning_content);
    // Token by token: each round in several chunks (the stored rounds alone would give one each).
    const second = pieces.findIndex((p) => p.startsWith('\n\n'));
    expect(second).toBeGreaterThan(1);
    expect(pieces.length - second).toBeGreaterThan(1);
    expect(reasoningChunks).toBeGreaterThan(1);
  });

  it('a retry of a request whose answer was lost attaches to its turn: one message, one turn, the answer', async () => {
    const m = `retry-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'Answered once.' }, { content: 'Answered twice.' }] });
    // A proxy that loses the first answer: the gateway answers it in full, the client gets a dropped connection.
    const seen: Array<string | undefined> = [];
    const gateway = new URL(stack.gatewayUrl);
    const proxy = http.createServer((req, res) => {
      seen.push(req.headers['x-stainless-retry-count'] as string | undefined);
      const first = seen.length === 1;
      const out = http.request(
        { host: gateway.hostname, port: gateway.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          if (first) {
            answer.resume();
            answer.on('end', () => res.socket?.destroy());
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(out);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as { port: number }).port;
    try {
      const retrying = new OpenAI({ apiKey: token, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 2 });
      const messages = [{ role: 'user' as const, content: `once ${m}` }];
      const { data, response } = await retrying.chat.completions
        .create({ model: 'skald/main', messages })
        .withResponse();
      expect(seen).toEqual(['0', '1']);
      expect(data.choices[0].message.content).toBe('Answered once.');
      const sessionId = response.headers.get('x-skald-conversation');
      const stored = await db.query<{ session_id: string }[]>(
        `SELECT session_id FROM chat_history WHERE role = 'user' AND content = $1`,
        [`once ${m}`],
      );
      expect(stored.map((r) => r.session_id)).toEqual([sessionId]);
      const inbox = await db.query<unknown[]>(`SELECT 1 FROM session_inbox WHERE content = $1`, [`once ${m}`]);
      expect(inbox).toHaveLength(1);
      expect(await simBodies(m)).toHaveLength(1);

      // The same request again, not a retry: a new turn.
      const again = await client.chat.completions.create({ model: 'skald/main', messages });
      expect(again.choices[0].message.content).toBe('Answered twice.');
      expect(await simBodies(m)).toHaveLength(2);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('requests with one Idempotency-Key are one request; another key is another turn', async () => {
    const m = `idem-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'First.' }, { content: 'Second.' }] });
    const messages = [{ role: 'user' as const, content: `idem ${m}` }];
    const key = (k: string) => ({ headers: { 'Idempotency-Key': `${k}-${m}` } });
    const a = await client.chat.completions.create({ model: 'skald/main', messages }, key('a'));
    const b = await client.chat.completions.create({ model: 'skald/main', messages }, key('a'));
    expect([a.choices[0].message.content, b.choices[0].message.content]).toEqual(['First.', 'First.']);
    expect(b.id).toBe(a.id);
    const c = await client.chat.completions.create({ model: 'skald/main', messages }, key('c'));
    expect(c.choices[0].message.content).toBe('Second.');
    await expect(
      client.chat.completions.create(
        { model: 'skald/main', messages: [{ role: 'user', content: `other ${m}` }] },
        key('a'),
      ),
    ).rejects.toMatchObject({ status: 400, param: 'Idempotency-Key' });
    expect(await simBodies(m)).toHaveLength(2);
  });

  it('a header names only the user’s chat conversations: every other session is 404 naming the param', async () => {
    const m = `src-${randomUUID()}`;
    const me = user.user!.id;
    // Every source a session has, with the flags of a chat conversation and of a job's run (as the worker writes them).
    const sources = ['web', 'openai', 'phone', 'cron', 'tic', 'task'];
    const kinds = [
      { interactive: true, ephemeral: false },
      { interactive: false, ephemeral: true },
      { interactive: false, ephemeral: false },
      { interactive: true, ephemeral: true },
    ];
    let n = 0;
    for (const source of sources)
      for (const k of kinds) {
        const id = randomUUID();
        await db.query(
          `INSERT INTO sessions (id, user_id, source, is_interactive, is_ephemeral, is_active, scratchpad_session_id)
           VALUES ($1, $2, $3, $4, $5, false, $1)`,
          [id, me, source, k.interactive, k.ephemeral],
        );
        const text = `hello ${n++} ${m}`;
        await sim.script({ match: text, replies: [{ content: 'Hi there.' }, { content: 'Hi again.' }] });
        const viaHeader = () =>
          client.chat.completions.create(
            { model: 'skald/main', messages: [{ role: 'user', content: text }] },
            { headers: { 'x-skald-conversation': id } },
          );
        const viaMetadata = () =>
          client.chat.completions.create({
            model: 'skald/main',
            messages: [{ role: 'user', content: `${text} again` }],
            metadata: { skald_conversation: id },
          });
        if (k.interactive && !k.ephemeral) {
          expect((await viaHeader()).choices[0].message.content).toBe('Hi there.');
          expect((await viaMetadata()).choices[0].message.content).toBe('Hi again.');
        } else {
          await expect(viaHeader()).rejects.toMatchObject({ status: 404, param: 'x-skald-conversation' });
          await expect(viaMetadata()).rejects.toMatchObject({ status: 404, param: 'metadata.skald_conversation' });
          const taken = await db.query<unknown[]>(`SELECT 1 FROM session_inbox WHERE session_id = $1`, [id]);
          expect(taken).toHaveLength(0);
        }
      }
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
