/**
 * Poison from the model never wedges a turn: any string in any field of a response is kept
 * exactly, a call that must not run ends as `tool_error` naming why, the model is never handed a
 * name it may not send back; a turn whose commits keep failing is ended by the retry budget; a
 * preview that cannot be reproduced is re-asked a bounded number of times.
 */
import fc from 'fast-check';
import {
  CALL_ENDED_BY_FAILED_TURN,
  endFailedTurn,
  failureKey,
  MAX_COMMIT_FAILURES,
  nextFailureCount,
  TURN_FAILED_MESSAGE,
  turnFailedMessage,
} from './failed-turn';
import { INVALID_TOOL_NAME, MAX_TOOL_ARGUMENTS_CHARS, TOOL_NAME_PATTERN } from './call-checks';
import { FakeGate, FakeHuman, InMemoryStore, LoopHarness, RejectedCommit, type FakeToolDefinition } from './testing';
import { MAX_STALE_REASKS } from './tool-call';
import { LoopInvariantError } from './errors';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const poison = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '\uffff', 'a', '{', '"', '\\'), maxLength: 10 }),
);

const echo: FakeToolDefinition = {
  name: 'echo',
  run: async (args) => ({ ok: true, content: `echo ${JSON.stringify(args)}` }),
};

describe('poison in the model response', () => {
  beforeAll(() => console.log(`agent-loop poison: seed=${SEED} — reproduce with FC_SEED=${SEED}`));

  it('any content, reasoning, tool name and arguments: the turn reaches its final answer, strings kept, history sendable', async () => {
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(poison, poison, poison, poison, fc.boolean(), async (content, reasoning, name, args, valid) => {
        cases++;
        const toolName = valid ? 'echo' : name;
        const h = new LoopHarness({
          tools: [echo],
          script: [
            { content, reasoning, toolCalls: [{ name: toolName, arguments: args }] },
            { content: `final ${content}`, reasoning },
          ],
        });
        const out = await h.run('go');
        expect(out).toMatchObject({ kind: 'final', content: `final ${content}` });
        const [call] = h.toolCalls();
        expect(call).toMatchObject({ name: toolName, argumentsText: args });
        expect(['done', 'failed']).toContain(call.status);
        if (!TOOL_NAME_PATTERN.test(toolName)) {
          expect(call.status).toBe('failed');
          expect(h.eventsOf('tool_error')[0].error).toContain('is not a valid tool name');
        }
        const assistant = h.messages().find((m) => m.role === 'assistant');
        expect(assistant).toMatchObject({ content, reasoningContent: reasoning });
        // The second request: every name in the history matches the API's rule.
        const names = h.model.calls[1].messages.flatMap((m) =>
          m.role === 'assistant' && m.tool_calls ? m.tool_calls.map((t) => t.function.name) : [],
        );
        expect(names.every((n) => TOOL_NAME_PATTERN.test(n))).toBe(true);
        if (!TOOL_NAME_PATTERN.test(toolName)) expect(names).toEqual([INVALID_TOOL_NAME]);
      }),
      { seed: SEED, numRuns: 500 },
    );
    expect(cases).toBe(500);
  });

  it('arguments over the size limit: tool_error naming the limit, never gated or run, the history carries a stand-in', async () => {
    const gate = new FakeGate();
    const huge = JSON.stringify({ text: 'x'.repeat(10 * 1024 * 1024) });
    const h = new LoopHarness({
      gate,
      tools: [echo],
      script: [{ toolCalls: [{ name: 'echo', arguments: huge }] }, { content: 'ok' }],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'ok' });
    expect(h.toolCalls()[0]).toMatchObject({ status: 'failed', argumentsText: huge });
    expect(h.eventsOf('tool_error')[0].error).toContain(`the limit is ${MAX_TOOL_ARGUMENTS_CHARS}`);
    expect(gate.checks).toEqual([]);
    expect(h.tools.started).toEqual([]);
    expect(JSON.stringify(h.eventsOf('tool_start')[0].arguments).length).toBeLessThan(200);
    expect(JSON.stringify(h.model.calls[1].messages).length).toBeLessThan(100_000);
  });
});

describe('the retry budget of a turn', () => {
  it('counts failures of the same step in a row; a committed event starts a new step', () => {
    const step = { turnId: 't1', lastSeq: 4 };
    expect(nextFailureCount({ key: null, count: 0 }, step)).toBe(1);
    expect(nextFailureCount({ key: failureKey(step), count: 2 }, step)).toBe(3);
    expect(nextFailureCount({ key: failureKey(step), count: 2 }, { ...step, lastSeq: 5 })).toBe(1);
    expect(nextFailureCount({ key: failureKey(step), count: 2 }, { ...step, turnId: 't2' })).toBe(1);
    expect(MAX_COMMIT_FAILURES).toBe(3);
  });

  it('a turn whose step the store keeps refusing: every attempt fails the same way; ending it fails its open calls and announces an error', async () => {
    const h = new LoopHarness({
      tools: [echo],
      script: [
        { toolCalls: [{ name: 'echo', arguments: { a: 1 } }] },
        { content: 'poisoned' },
        { content: 'poisoned' },
        { content: 'poisoned' },
      ],
    });
    h.store.rejectWhen((mutations) =>
      mutations.some((m) => m.kind === 'appendMessage' && m.message.content === 'poisoned'),
    );
    await expect(h.run('go')).rejects.toBeInstanceOf(RejectedCommit);
    for (let i = 1; i < MAX_COMMIT_FAILURES; i++) await expect(h.recover()).rejects.toBeInstanceOf(RejectedCommit);
    const ended = await endFailedTurn(h.deps, { sessionId: h.sessionId });
    expect(ended).toEqual({ endedCalls: 0, discarded: false });
    expect(h.store.view().sessions[0].turnState).toBe('finished');
    expect(h.events().at(-1)).toMatchObject({ type: 'error', code: 'internal', message: TURN_FAILED_MESSAGE });
    // Nothing is left to drive: recovery is idle.
    expect(await h.recover()).toEqual({ kind: 'idle' });
  });

  it('a session whose agent left the catalog: every attempt fails the same way; ended, it says why', async () => {
    const h = new LoopHarness({ tools: [echo], script: [{ content: 'never asked' }], session: { agentId: 'gone' } });
    await expect(h.run('go')).rejects.toBeInstanceOf(LoopInvariantError);
    for (let i = 1; i < MAX_COMMIT_FAILURES; i++) await expect(h.recover()).rejects.toBeInstanceOf(LoopInvariantError);
    expect(h.model.calls).toHaveLength(0);
    await endFailedTurn(h.deps, { sessionId: h.sessionId, reason: 'agent gone is not in the catalog' });
    const said = turnFailedMessage('agent gone is not in the catalog');
    expect(h.events().at(-1)).toMatchObject({ type: 'error', code: 'internal', message: said });
    expect(said).toContain('agent gone is not in the catalog');
    expect(said).not.toContain('could not be saved');
    expect(h.store.view().sessions[0].turnState).toBe('finished');
    expect(await h.recover()).toEqual({ kind: 'idle' });
  });

  it('a call waiting for a human ends failed, and the turn finished', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ echo: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [echo],
      script: [{ toolCalls: [{ name: 'echo', arguments: {} }] }],
    });
    expect((await h.run('go')).kind).toBe('parked');
    const ended = await endFailedTurn(h.deps, { sessionId: h.sessionId });
    expect(ended.endedCalls).toBe(1);
    expect(h.toolCalls()[0]).toMatchObject({ status: 'failed', result: CALL_ENDED_BY_FAILED_TURN });
    expect(h.eventTypes().slice(-2)).toEqual(['tool_error', 'error']);
    expect(h.store.view().sessions[0].turnState).toBe('finished');
  });

  it('input that never entered the conversation is discarded, announced, and the next message runs', async () => {
    const h = new LoopHarness({ script: [{ content: 'second answer' }] });
    const first = h.enqueue('cannot be stored');
    h.store.rejectWhen((mutations) => mutations.some((m) => m.kind === 'enterInbox' && m.inboxId === first));
    await expect(h.run({ kind: 'inbox', inboxId: first })).rejects.toBeInstanceOf(RejectedCommit);
    expect(await endFailedTurn(h.deps, { sessionId: h.sessionId, inboxId: first })).toEqual({
      endedCalls: 0,
      discarded: true,
    });
    expect(h.eventTypes()).toEqual(['message_discarded', 'error']);
    const second = h.enqueue('fine');
    expect(await h.run({ kind: 'inbox', inboxId: second })).toMatchObject({ kind: 'final', content: 'second answer' });
  });
});

describe('re-asking a human has a bound', () => {
  /** A write tool over a file that changes on every read: its preview can never be reproduced. */
  function restlessFile(): FakeToolDefinition & { reads: number } {
    const tool = {
      reads: 0,
      name: 'write_file',
      preview: async () => {
        tool.reads++;
        return { path: 'log.txt', oldContent: `v${tool.reads}`, newContent: 'new', baseHash: `h${tool.reads}` };
      },
      run: async () => ({
        ok: false as const,
        stale: true as const,
        error: '/workspace/log.txt changed since the preview that was approved; nothing was written',
      }),
    };
    return tool;
  }

  it('a file that changes on every read: at most one re-ask, then tool_error naming the reason; the turn goes on', async () => {
    const tool = restlessFile();
    const human = new FakeHuman(() => ({ kind: 'approved' }));
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: { kind: 'require' } }),
      human,
      tools: [tool],
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: 'log.txt', content: 'new' } }] },
        { content: 'gave up' },
      ],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'gave up' });
    expect(h.eventsOf('pending_write')).toHaveLength(1 + MAX_STALE_REASKS);
    expect(human.requests).toHaveLength(1 + MAX_STALE_REASKS);
    const [call] = h.toolCalls();
    expect(call.status).toBe('failed');
    expect(h.eventsOf('tool_error')[0].error).toMatch(
      /changed since the preview.*could not be reproduced after 2 approvals/,
    );
  });

  it('the bound holds across a park and a restart (the count is stored on the call)', async () => {
    const tool = restlessFile();
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [tool],
      script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'log.txt', content: 'new' } }] }],
    });
    expect((await h.run('go')).kind).toBe('parked');
    let store = InMemoryStore.fromSnapshot(h.store.snapshot());
    let cards = h.eventsOf('pending_write').length;
    const id = h.toolCalls()[0].id;
    for (let restart = 0; restart < 5; restart++) {
      const r = new LoopHarness({
        store,
        idPrefix: `r${restart}`,
        gate: new FakeGate({ write_file: { kind: 'require' } }),
        human: new FakeHuman([{ kind: 'park' }]),
        tools: [tool],
        script: [{ content: 'gave up' }],
      });
      const out = await r.resolve(id, { kind: 'approved' });
      cards = r.eventsOf('pending_write').length;
      store = InMemoryStore.fromSnapshot(r.store.snapshot());
      if (out.kind !== 'parked') {
        expect(out).toMatchObject({ kind: 'final', content: 'gave up' });
        expect(r.toolCalls()[0].status).toBe('failed');
        break;
      }
    }
    expect(cards).toBe(1 + MAX_STALE_REASKS);
  });

  it('a preview the tool set refuses (outside the workspace): no card, no human asked, tool_error with the reason', async () => {
    const human = new FakeHuman(() => ({ kind: 'approved' }));
    const refusing = {
      name: 'write_file',
      preview: async () => ({
        refused: '/workspace/link resolves outside the workspace (through a symlink); access refused',
      }),
      run: async () => ({ ok: true as const, content: 'never' }),
    } as unknown as FakeToolDefinition;
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: { kind: 'require' } }),
      human,
      tools: [refusing],
      script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'link', content: 'x' } }] }, { content: 'ok' }],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'ok' });
    expect(human.requests).toEqual([]);
    expect(h.eventTypes()).not.toContain('pending_write');
    expect(h.eventTypes()).not.toContain('approval_required');
    expect(h.eventsOf('tool_error')[0].error).toContain('resolves outside the workspace');
    expect(h.tools.started).toEqual([]);
  });

  it('a recovery re-ask of a registered request is not cut short by a refusal (its card stays answerable)', async () => {
    let refuse = false;
    const tool = {
      name: 'write_file',
      preview: async () =>
        refuse
          ? { refused: '/workspace/a resolves outside the workspace' }
          : { path: 'a', newContent: 'x', baseHash: 'h' },
      run: async () => ({ ok: false as const, error: '/workspace/a resolves outside the workspace' }),
    } as unknown as FakeToolDefinition;
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: { kind: 'require' } }),
      human: new FakeHuman(['wait']),
      tools: [tool],
      script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'a', content: 'x' } }] }],
    });
    const abort = new AbortController();
    const first = h.run('go', abort.signal);
    await new Promise((r) => setTimeout(r, 10));
    const snapshot = h.store.snapshot();
    abort.abort();
    await first;
    refuse = true; // the path became a link out while the worker was down
    const human = new FakeHuman([{ kind: 'approved' }]);
    const r = new LoopHarness({
      store: InMemoryStore.fromSnapshot(snapshot),
      idPrefix: 'b',
      gate: new FakeGate({ write_file: { kind: 'require' } }),
      human,
      tools: [tool],
      script: [{ content: 'ok' }],
    });
    expect(await r.recover()).toMatchObject({ kind: 'final', content: 'ok' });
    const requestId = (JSON.parse(snapshot) as { toolCalls: Array<{ requestId: string }> }).toolCalls[0].requestId;
    expect(human.requests.map((q) => q.requestId)).toEqual([requestId]);
    expect(r.toolCalls()[0]).toMatchObject({ status: 'failed', result: '/workspace/a resolves outside the workspace' });
  });
});
