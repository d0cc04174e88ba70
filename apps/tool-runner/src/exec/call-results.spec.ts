import { CallConflict, CallResults } from './call-results';

const value =
  <T>(v: T): (() => Promise<T>) =>
  () =>
    Promise.resolve(v);
import { Cancellations } from './cancellations';

describe('CallResults', () => {
  it('runs a call once and answers duplicates with the kept result', async () => {
    const results = new CallResults<string>({ maxEntries: 10, maxBytes: 1000 }, (v) => v.length);
    let runs = 0;
    const work = () => Promise.resolve(`result ${++runs}`);
    expect(await results.run('id-1', 'u:read_file', work)).toEqual({ value: 'result 1', replayed: false });
    expect(await results.run('id-1', 'u:read_file', work)).toEqual({ value: 'result 1', replayed: true });
    expect(runs).toBe(1);
  });

  it('makes a duplicate that arrives while the call runs wait for it', async () => {
    const results = new CallResults<string>({ maxEntries: 10, maxBytes: 1000 }, (v) => v.length);
    let release!: (v: string) => void;
    let runs = 0;
    const work = () => {
      runs++;
      return new Promise<string>((r) => (release = r));
    };
    const first = results.run('id', 'o', work);
    const second = results.run('id', 'o', work);
    release('done');
    expect(await first).toEqual({ value: 'done', replayed: false });
    expect(await second).toEqual({ value: 'done', replayed: true });
    expect(runs).toBe(1);
    expect(results.runningCount).toBe(0);
  });

  it('refuses an id reused by another user or tool', async () => {
    const results = new CallResults<string>({ maxEntries: 10, maxBytes: 1000 }, (v) => v.length);
    await results.run('id', 'alice:read_file', value('secret'));
    await expect(results.run('id', 'mallory:read_file', value('x'))).rejects.toBeInstanceOf(CallConflict);
  });

  it('forgets the least recently used results beyond its bounds', async () => {
    const results = new CallResults<string>({ maxEntries: 2, maxBytes: 1000 }, (v) => v.length);
    await results.run('a', 'o', value('A'));
    await results.run('b', 'o', value('B'));
    await results.run('a', 'o', value('A2')); // touches a
    await results.run('c', 'o', value('C'));
    expect(results.size).toBe(2);
    expect((await results.run('b', 'o', value('B2'))).value).toBe('B2');
    const bySize = new CallResults<string>({ maxEntries: 100, maxBytes: 10 }, (v) => v.length);
    await bySize.run('x', 'o', value('123456'));
    await bySize.run('y', 'o', value('123456'));
    expect(bySize.size).toBe(1);
  });

  it('does not keep a call that threw', async () => {
    const results = new CallResults<string>({ maxEntries: 10, maxBytes: 1000 }, (v) => v.length);
    await expect(results.run('id', 'o', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect((await results.run('id', 'o', value('ok'))).value).toBe('ok');
  });
});

describe('Cancellations', () => {
  it('aborts a running call, and remembers a cancel that arrives first', () => {
    const c = new Cancellations();
    const signal = c.begin('a');
    expect(c.cancel('a')).toBe(true);
    expect(signal.aborted).toBe(true);
    expect(c.cancel('b')).toBe(false);
    expect(c.begin('b').aborted).toBe(true);
    c.end('a');
    c.end('b');
    expect(c.runningCount).toBe(0);
  });
});
