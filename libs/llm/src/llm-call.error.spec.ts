import { kindForStatus, LlmCallError, parseRetryAfter, scrubSecrets } from './llm-call.error';

describe('LlmCallError classification', () => {
  it.each([
    [400, 'bad_request', false],
    [401, 'auth', false],
    [403, 'auth', false],
    [404, 'not_found', false],
    [408, 'timeout', true],
    [413, 'bad_request', false],
    [422, 'bad_request', false],
    [429, 'rate_limited', true],
    [500, 'server', true],
    [502, 'server', true],
    [503, 'server', true],
  ] as const)('HTTP %i is %s (retriable: %s)', (status, kind, retriable) => {
    expect(kindForStatus(status)).toBe(kind);
    expect(new LlmCallError(kindForStatus(status), 'c', 'x', status).retriable).toBe(retriable);
  });

  it('marks an abort as aborted and not retriable, and keeps it out of health', () => {
    const error = new LlmCallError('aborted', 'c', 'stop');
    expect(error).toMatchObject({
      aborted: true,
      retriable: false,
      countsAgainstHealth: false,
      code: 'llm_call_failed',
    });
    expect(new LlmCallError('bad_request', 'c', 'x', 400).countsAgainstHealth).toBe(false);
    expect(new LlmCallError('server', 'c', 'x', 500).countsAgainstHealth).toBe(true);
  });

  it('reads retry-after as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('7')).toBe(7000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    expect(parseRetryAfter(inAMinute)).toBeGreaterThan(50_000);
  });

  it('scrubs the key, bearer tokens and sk- keys from text', () => {
    const text = 'bad key my-secret-key-123 sent as Bearer my-secret-key-123; also sk-abcdefghijklmnop';
    const scrubbed = scrubSecrets(text, 'my-secret-key-123');
    expect(scrubbed).not.toContain('my-secret-key-123');
    expect(scrubbed).not.toContain('abcdefghijklmnop');
    expect(scrubbed).toContain('[redacted]');
  });
});
