import { expect } from '@jest/globals';
import fc from 'fast-check';
import type { ToolContext } from '@skald/agent-loop';
import { TOOL_ALIVE_INTERVAL_MS, TOOL_ALIVE_LOSS_MS } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { BusRequestError } from '@skald/messaging/bus-errors';
import { RunnerToolSet } from './runner-tool-set';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/** A bus whose `tools.exec` never answers (or fails as told); signs of life are sent by hand. */
function fakeBus(execOutcome: () => Promise<unknown> = () => new Promise(() => undefined)) {
  const listeners = new Map<string, () => void>();
  const published: Array<{ subject: string; message: unknown }> = [];
  const counts = { subscribes: 0 };
  const bus = {
    call: (subject: string) => (subject === 'tools.exec' ? execOutcome() : Promise.reject(new Error(subject))),
    subscribe: ({ subject }: { subject: string }, cb: () => void) => {
      counts.subscribes++;
      listeners.set(subject, cb);
      return { unsubscribe: () => listeners.delete(subject) };
    },
    publish: ({ subject }: { subject: string }, message: unknown) => published.push({ subject, message }),
  };
  return {
    bus: bus as unknown as Bus,
    beat: (id: string) => listeners.get(`tools.alive.${id}`)?.(),
    watching: (id: string) => listeners.has(`tools.alive.${id}`),
    published,
    counts,
  };
}

const ctx: ToolContext = {
  sessionId: '11111111-1111-4111-8111-111111111111',
  userId: '22222222-2222-4222-8222-222222222222',
  source: 'web',
  agentId: 'main',
  frameId: 'f',
  depth: 0,
  grants: [],
  runContext: { workingDirectory: null, systemPrompt: [] },
};
const ID = '33333333-3333-4333-8333-333333333333';
const cmd = { toolCallId: ID, name: 'execute_cmd', arguments: { command: 'sleep 60' }, argumentsText: '{}' };

describe('RunnerToolSet: a runner that dies or does not answer', () => {
  beforeAll(() => console.log(`runner-tool-set lost-runner: seed=${SEED} — reproduce with FC_SEED=${SEED}`));
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('any runner (a sign on receipt and every interval until it dies or replies): the reply if it comes before 5 s of silence after a sign, lost otherwise; one that gave no sign is waited for', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 12 }), // signs the runner sends before it dies (if it has not replied)
        fc.integer({ min: 0, max: 20_000 }), // when its reply would come
        async (signs, replyAt) => {
          let reply: (v: unknown) => void = () => undefined;
          const f = fakeBus(() => new Promise((r) => (reply = r)));
          let result: unknown;
          void new RunnerToolSet(f.bus, 'user')
            .build(cmd, ctx)
            .run(new AbortController().signal, () => undefined)
            .then((r) => (result = r));
          // The runner: a sign on receipt and at every interval, until it dies or replies. No sign
          // at all: a runner of a release that sends none; the request's deadline ends it, not the watch.
          let t = 0;
          if (signs > 0) f.beat(ID);
          const lostAt = signs === 0 ? Infinity : (signs - 1) * TOOL_ALIVE_INTERVAL_MS + TOOL_ALIVE_LOSS_MS;
          for (let k = 1; ; k++) {
            const next = Math.min(k * TOOL_ALIVE_INTERVAL_MS, replyAt, lostAt + 1);
            await jest.advanceTimersByTimeAsync(next - t);
            t = next;
            if (t === replyAt || t > lostAt) break;
            if (k < signs) f.beat(ID);
          }
          if (replyAt <= lostAt && t === replyAt) reply({ status: 'done', result: 'ok', result_type: 'text' });
          await jest.advanceTimersByTimeAsync(0);
          if (replyAt < lostAt) expect(result).toEqual({ ok: true, content: 'ok', resultType: 'text' });
          else if (replyAt > lostAt) expect(result).toMatchObject({ ok: false, interrupted: true });
          expect(f.watching(ID)).toBe(false);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    // 300 runners on Jest's fake clock: CPU-bound; the bound guards against a hang, not the machine's load.
  }, 60_000);

  it('a long command whose runner keeps saying it is alive is waited for', async () => {
    const f = fakeBus();
    let settled = false;
    void new RunnerToolSet(f.bus, 'user')
      .build(cmd, ctx)
      .run(new AbortController().signal, () => undefined)
      .then(() => {
        settled = true;
      });
    for (let t = 0; t < 30_000; t += TOOL_ALIVE_INTERVAL_MS) {
      f.beat(ID);
      await jest.advanceTimersByTimeAsync(TOOL_ALIVE_INTERVAL_MS);
    }
    expect(settled).toBe(false);
  });

  it('a runner of a release before tools.alive (no signs at all) is waited for: its reply after 30 s of silence is the result', async () => {
    let reply: (v: unknown) => void = () => undefined;
    const f = fakeBus(() => new Promise((r) => (reply = r)));
    let result: unknown;
    void new RunnerToolSet(f.bus, 'user')
      .build(cmd, ctx)
      .run(new AbortController().signal, () => undefined)
      .then((r) => (result = r));
    await jest.advanceTimersByTimeAsync(30_000);
    expect(result).toBeUndefined();
    reply({ status: 'done', result: 'slept', result_type: 'text' });
    await jest.advanceTimersByTimeAsync(0);
    expect(result).toEqual({ ok: true, content: 'slept', resultType: 'text' });
    expect(f.published).toEqual([]);
    expect(f.watching(ID)).toBe(false);
  });

  it('silence for the loss window ends the call interrupted, sends the kill, and stops watching', async () => {
    const f = fakeBus();
    const run = new RunnerToolSet(f.bus, 'user').build(cmd, ctx).run(new AbortController().signal, () => undefined);
    f.beat(ID);
    await jest.advanceTimersByTimeAsync(2_000);
    f.beat(ID);
    await jest.advanceTimersByTimeAsync(TOOL_ALIVE_LOSS_MS);
    await expect(run).resolves.toEqual({
      ok: false,
      interrupted: true,
      error: expect.stringContaining('the tool runner stopped answering while running this call'),
    });
    expect(f.published).toEqual([{ subject: `tools.cancel.${ID}`, message: { tool_call_id: ID } }]);
    expect(f.watching(ID)).toBe(false);
  });

  it('a request nobody took fails (not run); one that timed out or lost its connection may have run: interrupted', async () => {
    const noOne = fakeBus(() => Promise.reject(new BusRequestError('no_responders', 'tools.exec', 'no responders')));
    await expect(
      new RunnerToolSet(noOne.bus, 'user').build(cmd, ctx).run(new AbortController().signal, () => undefined),
    ).resolves.toEqual({ ok: false, error: expect.stringContaining('the call was not run') });
    for (const code of ['timeout', 'disconnected'] as const) {
      const lost = fakeBus(() => Promise.reject(new BusRequestError(code, 'tools.exec', code)));
      await expect(
        new RunnerToolSet(lost.bus, 'user').build(cmd, ctx).run(new AbortController().signal, () => undefined),
      ).resolves.toMatchObject({ ok: false, interrupted: true });
    }
  });
});
