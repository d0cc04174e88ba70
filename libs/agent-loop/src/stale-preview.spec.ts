/**
 * A preview records the hash of the file it was computed from; a write approved on
 * a preview whose file changed since writes nothing and the human is asked again, under a new
 * request id, with a fresh preview.
 */
import { expect } from '@jest/globals';
import {
  FakeGate,
  FakeHuman,
  InMemoryStore,
  LoopHarness,
  type FakeToolDefinition,
  type HarnessOptions,
  type StoreState,
} from './testing';
import type { HumanRequest } from './ports';

/** A one-file disk and an `append_file` tool over it whose `run` honours `expectedBaseHash`. */
function disk(initial: string) {
  const files = new Map<string, string>([['notes.md', initial]]);
  const hash = (path: string): string => (files.has(path) ? `h:${files.get(path)}` : 'absent');
  const tool: FakeToolDefinition = {
    name: 'append_file',
    preview: async (args) => {
      const { path, content } = args as { path: string; content: string };
      const old = files.get(path);
      return {
        path,
        ...(old !== undefined ? { oldContent: old } : {}),
        newContent: (old ?? '') + content,
        baseHash: hash(path),
      };
    },
    run: async (args, _signal, _progress, _call, options) => {
      const { path, content } = args as { path: string; content: string };
      if (options.expectedBaseHash !== undefined && options.expectedBaseHash !== hash(path)) {
        return { ok: false, stale: true, error: `${path} changed since the preview` };
      }
      files.set(path, (files.get(path) ?? '') + content);
      return { ok: true, content: 'appended', changedPaths: [path] };
    },
  };
  return { files, tool };
}

const appendCall = { name: 'append_file', arguments: { path: 'notes.md', content: '+agent' } };

describe('stale previews', () => {
  it('an approved write whose file changed is not written: re-asked with a fresh preview and a new request id; the second approval writes it', async () => {
    const d = disk('v1');
    const human = new FakeHuman(() => {
      // A concurrent edit lands while the first card is on screen.
      if (human.requests.length === 1) d.files.set('notes.md', 'v2 by hand');
      return { kind: 'approved' };
    });
    const h = new LoopHarness({
      gate: new FakeGate({ append_file: { kind: 'require' } }),
      human,
      tools: [d.tool],
      script: [{ toolCalls: [appendCall] }, { content: 'ok' }],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'ok' });

    const cards = h.eventsOf('pending_write');
    expect(cards).toHaveLength(2);
    expect(cards[0]).toMatchObject({ old_content: 'v1', new_content: 'v1+agent' });
    expect(cards[1]).toMatchObject({ old_content: 'v2 by hand', new_content: 'v2 by hand+agent' });
    expect(cards[1].request_id).not.toBe(cards[0].request_id);
    expect(human.requests.map((r) => r.requestId)).toEqual([cards[0].request_id, cards[1].request_id]);
    expect(human.requests[1]).toMatchObject({ kind: 'approval', preview: { oldContent: 'v2 by hand' } });

    // First run refused (nothing written), the second ran on the fresh preview's hash.
    expect(h.tools.started.map((r) => r.expectedBaseHash)).toEqual(['h:v1', 'h:v2 by hand']);
    expect(d.files.get('notes.md')).toBe(cards[1].new_content);
    const [call] = h.toolCalls();
    expect(call).toMatchObject({ status: 'done', result: 'appended', requestId: cards[1].request_id });
    // Never failed: the model sees one successful call.
    expect(h.eventTypes()).toEqual([
      'user_message',
      'tool_start',
      'pending_write',
      'pending_write',
      'tool_done',
      'file_changed',
      'done',
    ]);
  });

  it('a rejection of the fresh preview rejects the call and writes nothing', async () => {
    const d = disk('v1');
    const human = new FakeHuman((req: HumanRequest) => {
      if (human.requests.length === 1) {
        d.files.set('notes.md', 'v2');
        return { kind: 'approved' };
      }
      return { kind: 'rejected', note: `not on ${req.kind === 'approval' ? req.preview?.oldContent : ''}` };
    });
    const h = new LoopHarness({
      gate: new FakeGate({ append_file: { kind: 'require' } }),
      human,
      tools: [d.tool],
      script: [{ toolCalls: [appendCall] }, { content: 'fine' }],
    });
    await h.run('go');
    expect(d.files.get('notes.md')).toBe('v2');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'rejected',
      result: 'User rejected this tool call. Reason: not on v2',
    });
    expect(h.eventsOf('pending_write')).toHaveLength(2);
  });

  it('after a park and a restart: the stored preview hash refuses the changed file, re-asks, and the next approval writes', async () => {
    const d = disk('v1');
    const h = new LoopHarness({
      gate: new FakeGate({ append_file: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [d.tool],
      script: [{ toolCalls: [appendCall] }],
    });
    expect((await h.run('go')).kind).toBe('parked');
    const [parked] = h.toolCalls();
    expect(parked).toMatchObject({ status: 'awaiting_human', previewHash: 'h:v1' });

    d.files.set('notes.md', 'v2'); // edited while the card waits
    const restart = (from: LoopHarness, options: HarnessOptions, prefix: string): LoopHarness =>
      new LoopHarness({
        ...options,
        store: InMemoryStore.fromSnapshot(from.store.snapshot()),
        idPrefix: prefix,
        callIdPrefix: `${prefix}_`,
      });
    const r = restart(h, { tools: [d.tool], human: new FakeHuman([{ kind: 'park' }]), script: [] }, 'b');
    const second = await r.resolve(parked.id, { kind: 'approved' });
    expect(second).toMatchObject({ kind: 'parked', toolCallId: parked.id });
    expect(d.files.get('notes.md')).toBe('v2');
    const [reasked] = r.toolCalls();
    expect(reasked.requestId).not.toBe(parked.requestId);
    expect(reasked).toMatchObject({ status: 'awaiting_human', previewHash: 'h:v2' });
    const fresh = r.eventsOf('pending_write').at(-1)!;
    expect(fresh).toMatchObject({ request_id: reasked.requestId, old_content: 'v2', new_content: 'v2+agent' });

    const s = restart(r, { tools: [d.tool], script: [{ content: 'done' }] }, 'c');
    expect(await s.resolve(parked.id, { kind: 'approved' })).toMatchObject({ kind: 'final', content: 'done' });
    expect(d.files.get('notes.md')).toBe(fresh.new_content);
    expect(s.tools.started.map((x) => x.expectedBaseHash)).toEqual(['h:v2']);
    expect(s.toolCalls()[0]).toMatchObject({ status: 'done' });
  });

  it('a recovery re-ask keeps the request id and the stored hash, so an approval of the old card cannot write over a newer file', async () => {
    const d = disk('v1');
    const h = new LoopHarness({
      gate: new FakeGate({ append_file: { kind: 'require' } }),
      human: new FakeHuman(['wait']),
      tools: [d.tool],
      script: [{ toolCalls: [appendCall] }],
    });
    const abort = new AbortController();
    const first = h.run('go', abort.signal);
    await new Promise((r) => setTimeout(r, 10));
    // The worker dies here: the row is awaiting_human with the v1 hash.
    const snapshot = h.store.snapshot();
    abort.abort();
    await first;
    d.files.set('notes.md', 'v2');
    const human = new FakeHuman([{ kind: 'approved' }, { kind: 'approved' }]);
    const r = new LoopHarness({
      store: InMemoryStore.fromSnapshot(snapshot),
      idPrefix: 'b',
      callIdPrefix: 'r_',
      human,
      gate: new FakeGate({ append_file: { kind: 'require' } }),
      tools: [d.tool],
      script: [{ content: 'ok' }],
    });
    await r.recover();
    const firstId = (JSON.parse(snapshot) as StoreState).toolCalls[0].requestId;
    if (firstId === null) throw new Error('the first call was never sent for approval');
    expect(human.requests.map((q) => q.requestId)).toEqual([firstId, expect.not.stringMatching(firstId)]);
    expect(r.tools.started.map((x) => x.expectedBaseHash)).toEqual(['h:v1', 'h:v2']);
    expect(d.files.get('notes.md')).toBe('v2+agent');
  });

  it('a call approved without a preview hash runs without a check', async () => {
    const d = disk('v1');
    const { preview: _omit, ...noPreview } = d.tool;
    const h = new LoopHarness({
      gate: new FakeGate({ append_file: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [noPreview],
      script: [{ toolCalls: [appendCall] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.tools.started).toEqual([expect.not.objectContaining({ expectedBaseHash: expect.anything() })]);
    expect(h.toolCalls()[0].previewHash ?? null).toBeNull();
    expect(d.files.get('notes.md')).toBe('v1+agent');
  });
});
