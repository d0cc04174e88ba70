import { expect } from '@jest/globals';
import { LoopHarness } from './testing';
import { FakeGate } from './testing/fakes';

const lastToolMessage = (h: LoopHarness) => h.model.calls[1].messages.filter((m) => m.role === 'tool').pop();

/**
 * A service the loop depends on for one call (the approval check, the approval inbox, the tool
 * executor) that dies or does not answer ends that call with a sentence the user and the model
 * see; the turn goes on. Nothing is left running and nothing is run twice.
 */
describe('a call whose service is unavailable ends, and the turn goes on', () => {
  it('the approval check throws (unreachable, timed out): the call fails, was not run, the model answers', async () => {
    let ran = 0;
    const h = new LoopHarness({
      gate: new FakeGate(() => {
        throw new Error('approval.check timed out after 5000 ms');
      }),
      tools: [{ name: 'write_it', run: async () => ((ran += 1), { ok: true, content: 'written' }) }],
      script: [{ toolCalls: [{ name: 'write_it' }] }, { content: 'The approval service is down; try later.' }],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'The approval service is down; try later.' });
    expect(ran).toBe(0);
    expect(h.toolCalls()).toEqual([expect.objectContaining({ status: 'failed' })]);
    expect(h.eventsOf('tool_error')).toEqual([
      expect.objectContaining({
        error: expect.stringContaining('The approval check did not answer (approval.check timed out'),
      }),
    ]);
    expect(lastToolMessage(h)).toMatchObject({ role: 'tool', content: expect.stringContaining('was not run') });
  });

  it('the approval request cannot be registered: the call fails before any card is shown', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ risky: { kind: 'require' } }),
      tools: [{ name: 'risky', run: async () => ({ ok: true, content: 'ran' }) }],
      script: [{ toolCalls: [{ name: 'risky' }] }, { content: 'could not ask' }],
    });
    h.deps = {
      ...h.deps,
      human: {
        awaitHuman: () => Promise.reject(new Error('never asked')),
        prepare: () => Promise.reject(new Error('approval.register: no responders')),
      },
    };
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'could not ask' });
    expect(h.eventsOf('approval_required')).toHaveLength(0);
    expect(h.toolCalls()).toEqual([expect.objectContaining({ status: 'failed' })]);
    expect(h.eventsOf('tool_error')[0].error).toContain('approval request could not be registered');
  });

  it('the executor is lost after the hand-over: the call is interrupted (never re-run), with the reason', async () => {
    let ran = 0;
    const lost = 'the tool runner stopped answering while running this call; it may or may not have taken effect.';
    const h = new LoopHarness({
      tools: [{ name: 'cmd', run: async () => ((ran += 1), { ok: false, error: lost, interrupted: true }) }],
      script: [{ toolCalls: [{ name: 'cmd' }] }, { content: 'I will check the state first.' }],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final' });
    expect(ran).toBe(1);
    expect(h.toolCalls()).toEqual([expect.objectContaining({ status: 'interrupted', result: lost })]);
    expect(h.eventsOf('tool_error')).toEqual([expect.objectContaining({ error: lost })]);
    expect(lastToolMessage(h)).toMatchObject({ role: 'tool', content: `Error: ${lost}` });
  });
});
