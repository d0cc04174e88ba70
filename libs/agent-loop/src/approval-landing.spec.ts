/**
 * A call the gate answers `require` is judged on where it lands too; once the
 * human approves it, it runs bound to that landing — live, after a park and a restart, after a
 * stale-preview re-ask — so a symlink swapped while the card waits cannot redirect the write.
 */
import { expect } from '@jest/globals';
import {
  FakeGate,
  FakeHuman,
  InMemoryStore,
  LoopHarness,
  type FakeToolDefinition,
  type HarnessOptions,
} from './testing';
import type { GateDecision } from './ports';

const JUDGED = ['/workspace/real/notes.md'];
const writeCall = { name: 'write_file', arguments: { path: '/workspace/link/notes.md', content: 'x' } };

/** A write tool that records what it was bound to; `stale` answers the first run stale. */
function writer(opts: { staleFirst?: boolean } = {}) {
  let runs = 0;
  const tool: FakeToolDefinition = {
    name: 'write_file',
    preview: async (args) => ({
      path: (args as { path: string }).path,
      newContent: 'x',
      baseHash: `h${runs}`,
    }),
    run: async () => {
      runs += 1;
      if (opts.staleFirst && runs === 1) return { ok: false, stale: true, error: 'changed since the preview' };
      return { ok: true, content: 'written' };
    },
  };
  return tool;
}

const requireAt = (landing?: string[]): GateDecision => ({ kind: 'require', ...(landing ? { landing } : {}) });

function restart(from: LoopHarness, options: HarnessOptions, prefix: string): LoopHarness {
  return new LoopHarness({
    ...options,
    store: InMemoryStore.fromSnapshot(from.store.snapshot()),
    idPrefix: prefix,
    callIdPrefix: `${prefix}_`,
  });
}

describe('an approved call runs where the gate judged it to land', () => {
  it('live: the landing the gate asked about is stored with the request and bound to the run', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt(JUDGED) }),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }, { content: 'ok' }],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'ok' });
    expect(h.tools.started).toEqual([expect.objectContaining({ judgedLanding: JUDGED })]);
    expect(h.toolCalls()[0]).toMatchObject({ status: 'done', judgedLanding: JUDGED });
  });

  it('after a park and a restart: the preset approval runs bound to the stored landing, without a new check', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt(JUDGED) }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }],
    });
    expect((await h.run('go')).kind).toBe('parked');
    const [parked] = h.toolCalls();
    expect(parked).toMatchObject({ status: 'awaiting_human', judgedLanding: JUDGED });

    // The restarted worker's gate would judge it elsewhere now: it is not asked.
    const gate = new FakeGate({ write_file: requireAt(['/workspace/elsewhere/notes.md']) });
    const r = restart(h, { gate, tools: [writer()], script: [{ content: 'done' }] }, 'b');
    expect(await r.resolve(parked.id, { kind: 'approved' })).toMatchObject({ kind: 'final', content: 'done' });
    expect(gate.checks).toHaveLength(0);
    expect(r.tools.started).toEqual([expect.objectContaining({ judgedLanding: JUDGED })]);
  });

  it('a recovery that asks again under the stored request keeps the stored landing', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt(JUDGED) }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }],
    });
    await h.run('go');
    const r = restart(
      h,
      { human: new FakeHuman([{ kind: 'approved' }]), tools: [writer()], script: [{ content: 'ok' }] },
      'b',
    );
    await r.recover();
    expect(r.tools.started).toEqual([expect.objectContaining({ judgedLanding: JUDGED })]);
  });

  it('a stale-preview re-ask keeps the landing: the second approval runs bound to it too', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt(JUDGED) }),
      human: new FakeHuman([{ kind: 'approved' }, { kind: 'approved' }]),
      tools: [writer({ staleFirst: true })],
      script: [{ toolCalls: [writeCall] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.eventsOf('pending_write')).toHaveLength(2);
    expect(h.tools.started.map((s) => s.judgedLanding)).toEqual([JUDGED, JUDGED]);
    expect(h.toolCalls()[0]).toMatchObject({ status: 'done', judgedLanding: JUDGED });
  });

  it('the card and the request show where the write lands when that is not the path it names', async () => {
    const human = new FakeHuman([{ kind: 'approved' }]);
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt(JUDGED) }),
      human,
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.eventsOf('pending_write')[0]).toMatchObject({ path: '/workspace/link/notes.md', lands_at: JUDGED[0] });
    expect(human.requests[0]).toMatchObject({ kind: 'approval', landsAt: JUDGED[0] });
  });

  it('a landing that is the named path adds nothing to the card', async () => {
    const human = new FakeHuman([{ kind: 'approved' }]);
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt([writeCall.arguments.path]) }),
      human,
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.eventsOf('pending_write')[0]).not.toHaveProperty('lands_at');
    expect(human.requests[0]).not.toHaveProperty('landsAt');
  });

  it('a recovery re-ask shows the stored landing on its card', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt(JUDGED) }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }],
    });
    await h.run('go');
    const r = restart(
      h,
      { human: new FakeHuman([{ kind: 'approved' }]), tools: [writer()], script: [{ content: 'ok' }] },
      'b',
    );
    await r.recover();
    expect(r.eventsOf('pending_write').at(-1)).toMatchObject({ lands_at: JUDGED[0] });
  });

  it('a require without a landing stores none and runs unbound', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: requireAt() }),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [writer()],
      script: [{ toolCalls: [writeCall] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.tools.started).toEqual([expect.not.objectContaining({ judgedLanding: expect.anything() })]);
    expect(h.toolCalls()[0].judgedLanding ?? null).toBeNull();
  });
});
