import { LlmError, type LlmCallContext } from '@skald/agent-loop';
import { LlmCallError, type LlmManager } from '@skald/llm';
import type { LlmAccounting } from '../llm/llm.service';
import { failureKind, LlmAdapter } from './llm-adapter';

const context: LlmCallContext = {
  sessionId: '00000000-0000-4000-8000-000000000001',
  userId: '00000000-0000-4000-8000-000000000002',
  agentId: 'default',
  frameId: '00000000-0000-4000-8000-000000000003',
  messageId: '00000000-0000-4000-8000-000000000004',
  purpose: 'round',
};

function adapterFailingWith(error: Error) {
  const failures: Array<{ client: string; kind: string }> = [];
  const manager = { streamChat: () => Promise.reject(error) } as unknown as LlmManager;
  const accounting = {
    admit: () => Promise.resolve({ kind: 'admitted' as const, hold: null }),
    record: () => Promise.resolve(),
    release: () => Promise.resolve(),
    recordFailure: (_c: LlmCallContext, client: string, kind: string) => {
      failures.push({ client, kind });
      return Promise.resolve();
    },
  } satisfies LlmAccounting;
  return { adapter: new LlmAdapter(manager, accounting), failures };
}

const call = (adapter: LlmAdapter, signal = new AbortController().signal) =>
  adapter.stream({ name: 'gpt', cacheControl: false }, { messages: [], tools: [] }, signal, () => {}, context);

describe('LlmAdapter: failed calls are recorded', () => {
  it.each(['server', 'timeout', 'rate_limited', 'auth', 'bad_request'] as const)(
    'records a %s failure with its kind, then throws the loop its error',
    async (kind) => {
      const { adapter, failures } = adapterFailingWith(new LlmCallError(kind, 'gpt', 'boom', 503));
      await expect(call(adapter)).rejects.toBeInstanceOf(LlmError);
      expect(failures).toEqual([{ client: 'gpt', kind }]);
    },
  );

  it('records an unexpected error as other', async () => {
    const { adapter, failures } = adapterFailingWith(new TypeError('bug'));
    await expect(call(adapter)).rejects.toBeInstanceOf(TypeError);
    expect(failures).toEqual([{ client: 'gpt', kind: 'other' }]);
    expect(failureKind('x')).toBe('other');
  });

  it('records nothing for a call the caller aborted (a /stop is not a failure)', async () => {
    const aborted = adapterFailingWith(new LlmCallError('aborted', 'gpt', ''));
    await expect(call(aborted.adapter)).rejects.toBeInstanceOf(LlmError);
    const ctl = new AbortController();
    ctl.abort();
    const stopped = adapterFailingWith(new LlmCallError('network', 'gpt', 'reset'));
    await expect(call(stopped.adapter, ctl.signal)).rejects.toBeInstanceOf(LlmError);
    expect([...aborted.failures, ...stopped.failures]).toEqual([]);
  });
});
