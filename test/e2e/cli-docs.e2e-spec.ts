import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT } from '../support/db';
import { examplesWithOutput, runExample } from '../support/doc-examples';

jest.setTimeout(180_000);

const CLI = path.join(ROOT, 'apps/cli/dist/main.js');
/** Each ```bash block of docs/cli.md's examples with the ```text block shown as its output. */
const examples = () => examplesWithOutput(path.join(ROOT, 'docs/cli.md'), 'bash');

/** What the model answers to the examples' prompts (llm-sim, matched by the prompt's text). */
const SCRIPTS = [
  { match: 'Say hello', replies: [{ content: 'Hello from Skald.' }] },
  {
    match: 'Write the plan to plan.md',
    replies: [
      { tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: '1. ship it' } }] },
      { content: 'The plan is in plan.md.' },
    ],
  },
];

/** docs/cli.md's examples, run in order by bash as one user against a live stack, print what the page says. */
describe('docs/cli.md examples', () => {
  let stack: Stack;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const user = await admin.createUser(`cli-docs-${randomUUID()}@skald.test`, 'correct horse battery');
    const token = (await user.post<{ token: string }>('/api/auth/tokens', { name: 'docs' })).body.token;
    const sim = new LlmSimAdminClient(stack.simUrl);
    for (const s of SCRIPTS) await sim.script({ ...s, matchIn: 'last_user', repeatLast: true });
    dir = mkdtempSync(path.join(os.tmpdir(), 'skald-cli-docs-'));
    writeFileSync(path.join(dir, 'skald'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, { mode: 0o755 });
    env = {
      ...process.env,
      PATH: `${dir}:${process.env.PATH}`,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      SKALD_URL: stack.gatewayUrl,
      SKALD_TOKEN: token,
    };
  });

  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await stack?.stop();
  });

  it('the page has its examples', () => {
    expect(examples().map((e) => e.title)).toEqual([
      'The final answer of a turn',
      'The prompt from standard input, the events as JSON lines',
      'A call that needs a human, without waiting',
      'Answering it from the terminal',
    ]);
  });

  // in the page's order: the last answers what the one before it left waiting
  for (const example of examples())
    it(example.title, async () => {
      expect(await runExample(example, { dir, env })).toBe(example.output);
    });
});
