import { TurnFacts } from './turn-facts';

describe('TurnFacts', () => {
  it('asks a fact once per key while nothing was written', async () => {
    const facts = new TurnFacts();
    let asked = 0;
    const ask = (): Promise<number> => Promise.resolve(++asked);
    expect(await facts.get('a', ask)).toBe(1);
    expect(await facts.get('a', ask)).toBe(1);
    expect(await Promise.all([facts.get('b', ask), facts.get('b', ask)])).toEqual([2, 2]);
    expect(asked).toBe(2);
  });

  it('asks again after a call that may have written something', async () => {
    const facts = new TurnFacts();
    let asked = 0;
    const ask = (): Promise<number> => Promise.resolve(++asked);
    await facts.get('a', ask);
    facts.changed();
    expect(await facts.get('a', ask)).toBe(2);
  });

  it('does not remember a failed ask', async () => {
    const facts = new TurnFacts();
    await expect(facts.get('a', () => Promise.reject(new Error('timeout')))).rejects.toThrow('timeout');
    expect(await facts.get('a', () => Promise.resolve('ok'))).toBe('ok');
  });

  it('remembers a bounded number of facts', async () => {
    const facts = new TurnFacts();
    let asked = 0;
    for (let i = 0; i < 1000; i++) await facts.get(`k${i}`, () => Promise.resolve(++asked));
    // The first key was forgotten long ago: asked again.
    expect(await facts.get('k0', () => Promise.resolve(-1))).toBe(-1);
    expect(asked).toBe(1000);
  });
});
