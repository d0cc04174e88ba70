import { inboxMessageAt, userMessageEvent } from './injection';
import { LoopHarness } from './testing';
import type { Mutation } from './types';

/**
 * A turn whose first input the caller entered itself (the session worker does it in the statement
 * that stores the message): the caller's one commit — the item entered, the root frame opened when
 * there is none, the turn `running` named by the message, the echo — then `runTurn` with `entered`
 * ends with the same rows, events and model requests as `runTurn` with the inbox item.
 */
describe('runTurn: an input the caller already entered', () => {
  const script = [
    { content: 'Looking.', toolCalls: [{ name: 'ping', arguments: {} }] },
    { content: 'Done.', usage: { inputTokens: 3, outputTokens: 1 } },
  ];
  const ping = { name: 'ping', run: async () => ({ ok: true as const, content: 'pong' }) };

  /** Two harnesses with the same history: one earlier turn (so the root frame exists) or none. */
  async function pair(earlier: boolean): Promise<[LoopHarness, LoopHarness]> {
    const hs: [LoopHarness, LoopHarness] = [
      new LoopHarness({ tools: [ping], script: [{ content: 'first answer' }, ...script] }),
      new LoopHarness({ tools: [ping], script: [{ content: 'first answer' }, ...script] }),
    ];
    if (earlier) for (const h of hs) await h.run('first');
    else for (const h of hs) h.model.calls.length = 0;
    return hs;
  }

  /** The first commit as the caller makes it: the same mutations and event `runTurn` would write. */
  async function enterFirst(h: LoopHarness, inboxId: string): Promise<{ messageId: string; frameId: string }> {
    const item = (await h.store.listInbox(h.sessionId)).find((i) => i.id === inboxId);
    if (!item) throw new Error('no item');
    const root = (await h.store.listActiveFrames(h.sessionId)).find((f) => f.depth === 0);
    const frameId = root?.id ?? h.ids.newId();
    const mutations: Mutation[] = [];
    if (!root)
      mutations.push({
        kind: 'openFrame',
        frame: {
          id: frameId,
          sessionId: h.sessionId,
          parentFrameId: null,
          parentToolCallId: null,
          agentId: 'main',
          depth: 0,
          status: 'active',
          clientPin: null,
        },
      });
    const message = inboxMessageAt(h.sessionId, frameId, item, h.clock.now().toISOString());
    mutations.push(
      { kind: 'enterInbox', inboxId, message },
      { kind: 'setTurnState', sessionId: h.sessionId, state: 'running', turnId: message.id },
    );
    await h.store.commit(h.sessionId, mutations, [userMessageEvent(message)]);
    return { messageId: message.id, frameId };
  }

  it.each([
    ['a fresh conversation (the caller opens the root frame)', false],
    ['a conversation with an earlier turn', true],
  ])('%s: same rows, events and model requests as the inbox input', async (_, earlier) => {
    const [viaInbox, viaEntered] = await pair(earlier);
    const a = viaInbox.enqueue('hello', 'queue', 'c-1');
    const b = viaEntered.enqueue('hello', 'queue', 'c-1');
    const outA = await viaInbox.run({ kind: 'inbox', inboxId: a });
    const entered = await enterFirst(viaEntered, b);
    const outB = await viaEntered.run({ kind: 'entered', ...entered });
    expect(outB).toEqual(outA);
    expect(viaEntered.store.view()).toEqual(viaInbox.store.view());
    expect(viaEntered.events()).toEqual(viaInbox.events());
    expect(viaEntered.model.calls.map((c) => c.messages)).toEqual(viaInbox.model.calls.map((c) => c.messages));
  });

  it('refuses an input the session does not say is entered (turn not running under that id, or no such root)', async () => {
    const h = new LoopHarness({ script });
    const id = h.enqueue('hello');
    await expect(h.run({ kind: 'entered', messageId: id, frameId: 'nope' })).rejects.toThrow(/entered input/);
    const entered = await enterFirst(h, id);
    await expect(h.run({ kind: 'entered', ...entered, frameId: 'nope' })).rejects.toThrow(/no active root frame/);
    await expect(h.run({ kind: 'entered', ...entered, messageId: 'other' })).rejects.toThrow(/entered input/);
    expect(h.model.calls).toHaveLength(0);
  });
});
