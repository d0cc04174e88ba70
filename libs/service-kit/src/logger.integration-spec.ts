/**
 * The service logger on a real child process and a real pipe (what Kubernetes and the stack give a
 * service as stdout): a line whose log call returned is in the pipe (a SIGKILL right after loses
 * nothing); a reader that stops reading neither wedges the service nor makes it lose lines without
 * counting them; a closed stdout (EPIPE) does not crash it; secrets stay redacted.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const LOGGER = join(__dirname, '..', 'dist', 'logger.js');

/** The child: a service logger built as `runService` builds it, then one of the scenarios below. */
const CHILD = `
const kit = require(${JSON.stringify(LOGGER)});
const mode = process.env.MODE;
const send = (m) => new Promise((r) => process.send(m, r));
if (mode === 'burst-kill') {
  const log = kit.createLogger('svc', 'info', 'svc-1');
  const messages = JSON.parse(process.env.MESSAGES);
  messages.forEach((m, i) => log.info({ i }, m));
  process.kill(process.pid, 'SIGKILL');
} else if (mode === 'stall') {
  const dest = new kit.StdoutLogDestination(process.stdout, { maxQueuedBytes: 256 * 1024 });
  const log = kit.createLogger('svc', 'info', 'svc-1', dest);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  const pad = 'p'.repeat(200);
  for (let i = 0; i < 20000; i++) log.info({ i, pad }, 'line');
  setTimeout(async () => {
    await send({ ticks, dropped: kit.logLinesDropped(), queued: process.stdout.writableLength,
      heapMB: process.memoryUsage().heapUsed / 1048576 });
    process.once('message', async () => {
      await kit.flushLogs(5000); // the backlog first: a line logged while it is full is dropped too
      log.info({}, 'last');
      await kit.flushLogs(5000);
      clearInterval(timer);
      process.exit(0);
    });
  }, 200);
} else if (mode === 'epipe') {
  const log = kit.createLogger('svc', 'info', 'svc-1');
  process.once('message', () => {
    let n = 0;
    const t = setInterval(async () => {
      for (let i = 0; i < 50; i++) log.info({ n: n++ }, 'after the reader left');
      if (n >= 500) {
        clearInterval(t);
        await send({ alive: true, dropped: kit.logLinesDropped() });
        process.exit(0);
      }
    }, 2);
  });
  log.info({}, 'ready');
} else if (mode === 'secrets') {
  const log = kit.createLogger('svc', 'info', 'svc-1');
  log.info({ password: 'hunter2-pw', token: 'tok-SECRET1', apiKey: 'sk-SECRET2',
    req: { headers: { authorization: 'Bearer SECRET3' } }, env: { OPENAI_API_KEY: 'sk-SECRET4' },
    client: { api_key: 'SECRET5', secret: 'SECRET6', name: 'visible-name' } }, 'configured');
  kit.flushLogs(5000).then(() => process.exit(0));
}
`;

interface Child {
  lines: () => string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  messages: unknown[];
  nextMessage: () => Promise<unknown>;
  child: ReturnType<typeof spawn>;
}

function run(mode: string, env: Record<string, string> = {}, opts: { paused?: boolean } = {}): Child {
  const child = spawn(process.execPath, ['-e', CHILD], {
    env: { ...process.env, ...env, MODE: mode },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => chunks.push(d));
  child.stdout?.on('error', () => undefined);
  if (opts.paused) child.stdout?.pause();
  const messages: unknown[] = [];
  const waiting: Array<(m: unknown) => void> = [];
  child.on('message', (m) => {
    const w = waiting.shift();
    if (w) w(m);
    else messages.push(m);
  });
  return {
    child,
    messages,
    lines: () =>
      Buffer.concat(chunks)
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== ''),
    exit: new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal }))),
    // Fails (rather than waits for Jest's timeout) when the child exits without sending it.
    nextMessage: () =>
      messages.length > 0
        ? Promise.resolve(messages.shift())
        : new Promise((resolve, reject) => {
            waiting.push(resolve);
            child.once('exit', (code, signal) =>
              reject(new Error(`child exited (${code ?? signal}) before its report`)),
            );
          }),
  };
}

describe('service logger on a real pipe', () => {
  beforeAll(() => console.log(`logger.integration-spec: seed=${SEED} — reproduce with FC_SEED=${SEED}`));

  it('every line logged before a SIGKILL is in the pipe, whole and in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { minLength: 1, maxLength: 150 }),
        async (messages) => {
          const c = run('burst-kill', { MESSAGES: JSON.stringify(messages) });
          const { signal } = await c.exit;
          expect(signal).toBe('SIGKILL');
          const got = c.lines().map((l) => JSON.parse(l) as { i: number; msg: string; service: string });
          expect(got.map((l) => l.msg)).toEqual(messages);
          expect(got.map((l) => l.i)).toEqual(messages.map((_, i) => i));
          expect(got.every((l) => l.service === 'svc')).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 25 },
    );
  }, 120_000);

  it('a reader that stops reading: the service keeps running, memory is bounded, dropped lines are counted and reported', async () => {
    const c = run('stall', {}, { paused: true });
    const report = (await c.nextMessage()) as { ticks: number; dropped: number; queued: number; heapMB: number };
    // The event loop ran (timers fired) while 20,000 lines met a full pipe.
    expect(report.ticks).toBeGreaterThan(0);
    // What could not be queued was dropped and counted; the queue stayed within its bound (+ one line).
    expect(report.dropped).toBeGreaterThan(0);
    expect(report.queued).toBeLessThanOrEqual(256 * 1024 + 1024);
    // The reader comes back: everything queued arrives, then a line saying how many were dropped.
    c.child.stdout?.resume();
    c.child.send('go');
    const { code } = await c.exit;
    expect(code).toBe(0);
    const lines = c.lines().map((l) => JSON.parse(l) as { msg: string; i?: number; droppedLines?: number });
    const kept = lines.filter((l) => l.msg === 'line');
    expect(kept.length + report.dropped).toBe(20000);
    // What was kept is a prefix (lines are dropped from the end, never torn or reordered).
    expect(kept.map((l) => l.i)).toEqual(kept.map((_, i) => i));
    const note = lines.find((l) => l.droppedLines !== undefined);
    expect(note?.droppedLines).toBe(report.dropped);
    // The line logged after the reader came back is there, after every kept line.
    const last = lines.findIndex((l) => l.msg === 'last');
    expect(last).toBeGreaterThan(lines.lastIndexOf(kept[kept.length - 1]));
  }, 60_000);

  it('a closed stdout (EPIPE) does not crash the service; the lines are counted as dropped', async () => {
    const c = run('epipe');
    await new Promise<void>((resolve) => c.child.stdout?.once('data', () => resolve()));
    c.child.stdout?.destroy();
    c.child.send('go');
    const report = (await c.nextMessage()) as { alive: boolean; dropped: number };
    expect(report.alive).toBe(true);
    expect(report.dropped).toBeGreaterThan(0);
    const { code, signal } = await c.exit;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  }, 30_000);

  it('secrets are redacted', async () => {
    const c = run('secrets');
    expect((await c.exit).code).toBe(0);
    const text = c.lines().join('\n');
    expect(text).toContain('visible-name');
    expect(text).toContain('[redacted]');
    for (const secret of ['hunter2-pw', 'SECRET1', 'SECRET2', 'SECRET3', 'SECRET4', 'SECRET5', 'SECRET6'])
      expect(text).not.toContain(secret);
  }, 30_000);
});
