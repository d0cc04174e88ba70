import { HeldBackNotices } from './held-back-notices';

describe('held-back notices (turn_waiting once per held-back input)', () => {
  it('tells an input once however often it is held back; another input of the session is told again', () => {
    const n = new HeldBackNotices();
    expect(n.first('s1', 'a')).toBe(true);
    for (let pass = 0; pass < 50; pass++) expect(n.first('s1', 'a')).toBe(false);
    expect(n.first('s2', 'a')).toBe(true);
    expect(n.first('s1', 'b')).toBe(true);
    expect(n.first('s1', 'b')).toBe(false);
  });

  it('remembers at most its bound: the oldest session is forgotten first', () => {
    const n = new HeldBackNotices(3);
    for (const s of ['s1', 's2', 's3', 's4']) expect(n.first(s, 'x')).toBe(true);
    expect(n.size).toBe(3);
    expect(n.first('s4', 'x')).toBe(false);
    expect(n.first('s1', 'x')).toBe(true);
  });
});
