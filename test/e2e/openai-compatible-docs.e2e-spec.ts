import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT } from '../support/db';
import { fencedExamples, runExample } from '../support/doc-examples';

jest.setTimeout(180_000);

/** Every fenced example of the page, in order: its language and its code. */
const examples = () => fencedExamples(path.join(ROOT, 'docs/openai-compatible.md'));

/**
 * What each example of docs/openai-compatible.md prints, in the page's order. An example added to
 * the page without a line here fails the count.
 */
const PRINTS: RegExp[] = [
  /"id":"skald\/main"/,
  /"content":"Bonjour !"/,
  /^Bonjour !$/m,
  /^One, two, three\.$/m,
  /^same conversation\nGreen\.$/m,
  /"content":"Bonjour !"/,
  /"content":"Bonjour !"/,
];

describe('docs/openai-compatible.md: every example runs against a live stack and prints what the page says', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const user = await admin.createUser(`docs-${randomUUID()}@skald.test`, 'correct horse battery');
    const token = (await user.post<{ token: string }>('/api/auth/tokens', { name: 'docs' })).body.token;
    const web = await user.post<{ session_id: string }>('/api/sessions?source=web');
    env = { ...process.env, SKALD_URL: stack.gatewayUrl, SKALD_TOKEN: token, SKALD_CONVERSATION: web.body.session_id };
    const script = (match: string, reply: Record<string, unknown>) =>
      sim.script({ match, matchIn: 'last_user', repeatLast: true, replies: [reply] });
    await script('Say hello in French.', { content: 'Bonjour !' });
    await script('Count to three.', { reasoning: 'Counting.', content: 'One, two, three.' });
    await script('My favourite colour is green.', { content: 'Noted.' });
    await script('What is my favourite colour?', { content: 'Green.' });
    // The examples import `openai` as a reader's project would: from a directory whose node_modules has it.
    dir = mkdtempSync(path.join(ROOT, 'node_modules', '.openai-doc-examples-'));
  });

  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await stack?.stop();
  });

  it('has an expectation for each example, and each one prints it', async () => {
    const all = examples();
    expect(all.map((e) => e.lang).every((l) => l === 'sh' || l === 'js')).toBe(true);
    expect(all.length).toBe(PRINTS.length);
    for (const [i, ex] of all.entries()) {
      const printed = (await runExample(ex, { dir, env, errexit: true })).trim();
      expect({ example: i, matches: PRINTS[i].test(printed), printed }).toEqual({ example: i, matches: true, printed });
    }
  });
});
