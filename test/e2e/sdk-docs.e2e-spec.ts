import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT } from '../support/db';
import { examplesWithOutput, runExample } from '../support/doc-examples';

jest.setTimeout(180_000);

/** Where the examples are written to run: inside the repository, so `@skald/client` resolves to the built package. */
const DIR = path.join(ROOT, 'test-results/sdk-docs');

/** Each ```js block of docs/sdk.md with the ```text block shown as its output. */
const examples = () => examplesWithOutput(path.join(ROOT, 'docs/sdk.md'), 'js');

/** What the model answers to each example's message (llm-sim, matched by the message's text). */
const SCRIPTS = [
  { match: 'Say hello', replies: [{ content: 'Hello from Skald.', latency: { betweenChunksMs: 5 } }] },
  {
    match: 'Write the plan to plan.md',
    replies: [
      { tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: '1. ship it' } }] },
      { content: 'The plan is in plan.md.' },
    ],
  },
  { match: 'What is in the attachment?', replies: [{ content: 'The attachment says 4242.' }] },
  { match: 'Name a colour', replies: [{ content: 'Blue.' }, { content: 'Green.' }] },
];

/** docs/sdk.md's examples, run as ES modules by Node against a live stack, print what the page says they print. */
describe('docs/sdk.md examples', () => {
  let stack: Stack;
  let admin: ApiClient;

  beforeAll(async () => {
    // a machine shared with other test runs can take longer than the default 30 s to bring the apps up
    stack = await Stack.start({ root: ROOT });
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const sim = new LlmSimAdminClient(stack.simUrl);
    for (const s of SCRIPTS) await sim.script({ ...s, matchIn: 'last_user', repeatLast: true });
    mkdirSync(DIR, { recursive: true });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the page has its examples', () => {
    expect(examples().map((e) => e.title)).toEqual([
      'A turn, streamed',
      'An approval, answered from the stream',
      'An upload, a message that carries it, and REST',
      'Every REST operation by its operationId, pages, and a regenerate',
    ]);
  });

  it.each(examples().map((e) => [e.title, e] as const))('%s', async (_title, example) => {
    const email = `docs-${randomUUID()}@skald.test`;
    await admin.createUser(email, 'correct horse battery');
    const stdout = await runExample(example, {
      dir: DIR,
      cwd: ROOT,
      env: { ...process.env, SKALD_URL: stack.gatewayUrl, SKALD_EMAIL: email, SKALD_PASSWORD: 'correct horse battery' },
    });
    expect(stdout).toBe(example.output);
  });
});
