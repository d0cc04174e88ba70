import { expect } from '@jest/globals';
import OpenAI, { BadRequestError } from 'openai';
import { startLlmSim, type LlmSim } from './sim-server';
import { openAiFor } from './testing-fixtures/sim-test-client';

const call = (
  id: string,
  name = 'read_file',
): { id: string; type: 'function'; function: { name: string; arguments: string } } => ({
  id,
  type: 'function',
  function: { name, arguments: '{}' },
});
const tool = (name: string): { type: 'function'; function: { name: string } } => ({
  type: 'function',
  function: { name },
});

describe('llm-sim rejects malformed requests with 400 and an OpenAI error body', () => {
  let sim: LlmSim;
  let client: OpenAI;

  beforeAll(async () => {
    sim = await startLlmSim();
    client = openAiFor(sim);
  });
  afterAll(() => sim.close());

  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a missing model', { messages: [{ role: 'user', content: 'x' }] }, /model/],
    ['missing messages', { model: 'm' }, /messages/],
    ['empty messages', { model: 'm', messages: [] }, /messages.*empty/],
    ['an unknown role', { model: 'm', messages: [{ role: 'agent', content: 'x' }] }, /messages\[0\]\.role/],
    ['a user message without content', { model: 'm', messages: [{ role: 'user' }] }, /messages\[0\]\.content/],
    [
      'a tool message answering no assistant tool call',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'call_1', content: 'r' },
        ],
      },
      /role 'tool' must be a response/,
    ],
    [
      'a tool message answering another id',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [call('call_1')] },
          { role: 'tool', tool_call_id: 'call_2', content: 'r' },
        ],
      },
      /call_2/,
    ],
    [
      'a tool message after an intervening user message',
      {
        model: 'm',
        messages: [
          { role: 'assistant', content: null, tool_calls: [call('call_1')] },
          { role: 'tool', tool_call_id: 'call_1', content: 'r' },
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'call_1', content: 'again' },
        ],
      },
      /role 'tool' must be a response/,
    ],
    [
      'an assistant tool call not answered before the next user message',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [call('call_1'), call('call_2')] },
          { role: 'tool', tool_call_id: 'call_1', content: 'r' },
          { role: 'user', content: 'y' },
        ],
      },
      /did not have response messages: call_2/,
    ],
    [
      'an assistant tool call left unanswered at the end',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [call('call_1')] },
        ],
      },
      /call_1/,
    ],
    [
      'tool call arguments given as an object instead of JSON text',
      {
        model: 'm',
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }],
          },
          { role: 'tool', tool_call_id: 'c', content: 'r' },
        ],
      },
      /arguments/,
    ],
    [
      'an assistant message with neither content nor tool calls',
      { model: 'm', messages: [{ role: 'assistant' }] },
      /content/,
    ],
    [
      'duplicate tool names',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [tool('a'), tool('a')] },
      /duplicate/,
    ],
    [
      'a tool name with a dot',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [tool('mcp.read')] },
      /pattern/,
    ],
    [
      'a tool name over 64 characters',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [tool('x'.repeat(65))] },
      /pattern/,
    ],
    [
      'tool_choice without tools',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], tool_choice: 'auto' },
      /tool_choice/,
    ],
    [
      'stream_options without stream',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } },
      /stream_options/,
    ],
    [
      'an unknown field on a message (a leaked reasoning_content)',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: 'a', reasoning_content: 'thought' },
        ],
      },
      /Additional properties are not allowed \('reasoning_content' was unexpected\) - 'messages\[1\]'/,
    ],
    [
      'a tool message with a name',
      {
        model: 'm',
        messages: [
          { role: 'assistant', content: null, tool_calls: [call('c')] },
          { role: 'tool', tool_call_id: 'c', content: 'r', name: 'read_file' },
        ],
      },
      /'name' was unexpected/,
    ],
    [
      'a text part with an unknown key',
      { model: 'm', messages: [{ role: 'system', content: [{ type: 'text', text: 's', cached: true }] }] },
      /messages\[0\]\.content\[0\]/,
    ],
    [
      'a cache_control that is not ephemeral',
      {
        model: 'm',
        messages: [{ role: 'system', content: [{ type: 'text', text: 's', cache_control: { type: 'forever' } }] }],
      },
      /cache_control/,
    ],
    [
      'a tool call with an extra field',
      {
        model: 'm',
        messages: [
          { role: 'assistant', content: null, tool_calls: [{ ...call('c'), index: 0 }] },
          { role: 'tool', tool_call_id: 'c', content: 'r' },
        ],
      },
      /'index'/,
    ],
    [
      'an image part without a URL',
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
      /image_url\.url/,
    ],
    [
      'an image data URL of a type models do not take',
      {
        model: 'm',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/svg+xml;base64,PHN2Zy8+' } }] },
        ],
      },
      /Invalid image URL/,
    ],
    [
      'an image data URL that is not base64',
      {
        model: 'm',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,not base64!' } }] },
        ],
      },
      /Invalid image URL/,
    ],
    [
      'an image part in a system message',
      {
        model: 'm',
        messages: [
          { role: 'system', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        ],
      },
      /not allowed here/,
    ],
    [
      'a temperature out of range',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 3 },
      /temperature/,
    ],
  ];

  it.each(cases)('rejects %s', async (_name, body, message) => {
    const error = await client.chat.completions
      .create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).type).toBe('invalid_request_error');
    expect((error as BadRequestError).message).toMatch(message);
    const entry = sim.requests().at(-1);
    expect(entry).toMatchObject({ status: 400, outcome: 'rejected' });
    expect(entry?.error).toMatch(message);
  });

  it('rejects a body that is not JSON', async () => {
    const response = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      body: '{"model": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: expect.objectContaining({ type: 'invalid_request_error' }) });
  });

  it('accepts a well-formed conversation: system, developer, tool round trip, parallel calls, content parts, extra params', async () => {
    sim.reply({ content: 'fine' });
    const completion = await client.chat.completions.create({
      model: 'm',
      temperature: 0.2,
      messages: [
        {
          role: 'system',
          content: [{ type: 'text', text: 'static prompt', ...({ cache_control: { type: 'ephemeral' } } as object) }],
        },
        { role: 'developer', content: 'dev' },
        { role: 'user', content: [{ type: 'text', text: 'read two files' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'and this image' },
            { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ', detail: 'auto' } },
          ],
        },
        { role: 'assistant', content: 'reading', tool_calls: [call('call_a'), call('call_b', 'list_dir')] },
        { role: 'tool', tool_call_id: 'call_b', content: 'listing' },
        { role: 'tool', tool_call_id: 'call_a', content: [{ type: 'text', text: 'file' }] },
        { role: 'assistant', content: 'both read' },
        { role: 'user', content: 'thanks' },
      ],
      tools: [tool('read_file'), tool('list_dir'), tool('mcp__github__create-issue')],
      tool_choice: 'auto',
      // provider-specific extras pass through untouched
      ...({ reasoning_effort: 'low', provider: { order: ['x'] } } as object),
    });
    expect(completion.choices[0].message.content).toBe('fine');
  });
});
