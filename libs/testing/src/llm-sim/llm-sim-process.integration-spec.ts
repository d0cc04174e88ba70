import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { LlmSimAdminClient, LlmSimAdminError } from './sim-admin-client';
import { simFail } from './sim-replies';

interface Listening {
  event: 'listening';
  url: string;
  adminUrl: string;
  port: number;
}

/** Starts `main.ts` as its own OS process and reads its `listening` line. */
async function spawnSim(
  env: Record<string, string> = {},
): Promise<{ child: ChildProcessWithoutNullStreams; listening: Listening; lines: string[] }> {
  const child = spawn(
    process.execPath,
    ['-r', join(__dirname, 'testing-fixtures', 'swc-register.js'), join(__dirname, 'main.ts')],
    {
      env: { ...process.env, PORT: '0', ...env },
    },
  );
  const lines: string[] = [];
  const reader = createInterface({ input: child.stdout });
  const listening = await new Promise<Listening>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('llm-sim process did not print its listening line in time')),
      15000,
    );
    reader.on('line', (line) => {
      lines.push(line);
      const event = JSON.parse(line) as { event: string };
      if (event.event === 'listening') {
        clearTimeout(timer);
        resolve(event as Listening);
      }
    });
    child.once('exit', (code) => reject(new Error(`llm-sim process exited early with ${code}`)));
  });
  return { child, listening, lines };
}

describe('llm-sim as a separate process, scripted through the admin HTTP API', () => {
  let child: ChildProcessWithoutNullStreams;
  let listening: Listening;
  let lines: string[];
  let admin: LlmSimAdminClient;
  let client: OpenAI;

  beforeAll(async () => {
    ({ child, listening, lines } = await spawnSim());
    admin = new LlmSimAdminClient(listening.adminUrl);
    client = new OpenAI({ baseURL: listening.url, apiKey: 'sk-process', maxRetries: 0 });
  }, 20000);

  afterAll(async () => {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });

  beforeEach(() => admin.reset());

  it('prints one JSON listening line with a base URL ending in /v1', () => {
    expect(listening.url).toBe(`http://127.0.0.1:${listening.port}/v1`);
    expect(listening.port).toBeGreaterThan(0);
    expect(lines).toHaveLength(1);
  });

  it('registers scripts, answers from them, and lists what is left', async () => {
    const id = await admin.script({ match: '[P1]', replies: [{ content: 'remote one' }, simFail.rateLimited(0)] });
    const completion = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'go [P1]' }],
    });
    expect(completion.choices[0].message.content).toBe('remote one');
    expect(await admin.scripts()).toEqual([expect.objectContaining({ id, match: '[P1]', consumed: 1, remaining: 1 })]);
    expect(await admin.unscript(id)).toBe(true);
    expect(await admin.unscript(id)).toBe(false);
  });

  it('serves the request log, filtered by a marker and by id', async () => {
    await admin.script({ replies: [{ content: 'a' }, { content: 'b' }] });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: '[Q1]' }] });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: '[Q2]' }] });
    const only = await admin.requests({ contains: '[Q2]' });
    expect(only).toHaveLength(1);
    expect(only[0]).toMatchObject({
      authorization: true,
      outcome: 'completed',
      body: { messages: [{ content: '[Q2]' }] },
    });
    expect(await admin.requests({ sinceId: only[0].id })).toEqual([]);
  });

  it('lets a test in another process see an aborted request', async () => {
    await admin.script({ match: '[ABORT]', replies: [{ content: 'never', latency: { firstByteMs: 5000 } }] });
    const controller = new AbortController();
    const pending = client.chat.completions.create(
      { model: 'm', stream: true, messages: [{ role: 'user', content: '[ABORT]' }] },
      { signal: controller.signal },
    );
    await admin.waitForRequest((r) => r.outcome === 'pending', { query: { contains: '[ABORT]' } });
    controller.abort();
    await expect(pending).rejects.toThrow();
    const entry = await admin.waitForRequest((r) => r.clientAborted, { query: { contains: '[ABORT]' } });
    expect(entry.outcome).toBe('client_aborted');
  });

  it('sets the global latency', async () => {
    await admin.setLatency({ firstByteMs: 120 });
    const started = Date.now();
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
  });

  it('rejects an invalid script with a clear 400', async () => {
    const error = await admin
      .script({ replies: [{ fail: { kind: 'http_error', status: 200 } }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmSimAdminError);
    expect((error as LlmSimAdminError).status).toBe(400);
    expect((error as Error).message).toMatch(/status/);
  });

  it('closes cleanly on SIGTERM', async () => {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    expect(JSON.parse(lines[lines.length - 1])).toEqual({ event: 'closed', signal: 'SIGTERM' });
  });
});
