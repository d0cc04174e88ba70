import { ProgressCoalescer } from './tool-progress';

describe('ProgressCoalescer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('coalesces chunks of a stream into one event per interval', () => {
    const sent: [string, string][] = [];
    const c = new ProgressCoalescer((s, t) => sent.push([s, t]), {
      intervalMs: 100,
      maxChunkChars: 1000,
      maxTotalChars: 10_000,
    });
    c.push('stdout', Buffer.from('a'));
    c.push('stdout', Buffer.from('b'));
    expect(sent).toEqual([]);
    jest.advanceTimersByTime(100);
    expect(sent).toEqual([['stdout', 'ab']]);
    c.push('stdout', Buffer.from('c'));
    c.push('stderr', Buffer.from('E'));
    c.close();
    expect(sent).toEqual([
      ['stdout', 'ab'],
      ['stdout', 'c'],
      ['stderr', 'E'],
    ]);
  });

  it('never splits a UTF-8 character across events', () => {
    const sent: string[] = [];
    const c = new ProgressCoalescer((_s, t) => sent.push(t), { intervalMs: 10, maxChunkChars: 1, maxTotalChars: 100 });
    const euro = Buffer.from('€');
    c.push('stdout', euro.subarray(0, 1));
    c.push('stdout', euro.subarray(1));
    c.close();
    expect(sent).toEqual(['€']);
  });

  it('caps the total so unbounded output cannot flood the broker', () => {
    const sent: string[] = [];
    const c = new ProgressCoalescer((_s, t) => sent.push(t), {
      intervalMs: 10,
      maxChunkChars: 100,
      maxTotalChars: 250,
    });
    for (let i = 0; i < 1000; i++) c.push('stdout', Buffer.from('y\n'.repeat(50)));
    c.close();
    expect(sent.join('').length).toBeLessThan(400);
    expect(sent[sent.length - 1]).toContain('[live output stopped');
  });
});
