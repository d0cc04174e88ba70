import fc from 'fast-check';
import { PUSH_MESSAGE_LIMITS, readPushMessage, type PushMessage } from './push-message';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const good: PushMessage = {
  kind: 'approval',
  title: 'Approve execute_cmd?',
  body: 'rm -rf build',
  url: '/#inbox',
  tag: 'approval:7f1c',
  action_token: 'abc_DEF-123.sig_456',
};

describe('readPushMessage', () => {
  it('reads a well-formed message as it is, and only its fields', () => {
    expect(readPushMessage(good)).toEqual(good);
    expect(readPushMessage({ ...good, extra: 'x' })).toEqual(good);
    const { action_token: _, ...turn } = { ...good, kind: 'turn' as const };
    expect(readPushMessage(turn)).toEqual(turn);
  });

  it('refuses a url that leaves the origin, however it is spelled', () => {
    for (const url of [
      '//evil.example/x',
      '/\\evil.example',
      '\\\\evil.example',
      'https://evil.example/',
      'javascript:alert(1)',
      ' /x',
      '/x y',
      '/\tx',
      '',
    ])
      expect(readPushMessage({ ...good, url })).toBeNull();
  });

  it('an action token only on an approval', () => {
    expect(readPushMessage({ ...good, kind: 'job' })).toBeNull();
  });

  it('generated values: anything read back is well formed and within bounds; nothing else throws', () => {
    const field = fc.oneof(
      fc.string({ maxLength: 2100 }),
      fc.constantFrom('/', '//x', '/#inbox', 'approval', 'turn', 'a.b', 'a..b'),
      fc.integer(),
      fc.constant(null),
      fc.constant(undefined),
      fc.array(fc.string(), { maxLength: 2 }),
    );
    fc.assert(
      fc.property(
        fc.record(
          { kind: field, title: field, body: field, url: field, tag: field, action_token: field },
          { requiredKeys: [] },
        ),
        (value) => {
          const m = readPushMessage(value);
          if (m === null) return;
          expect(m.url.startsWith('/') && !m.url.startsWith('//') && !m.url.includes('\\')).toBe(true);
          for (const k of ['title', 'body', 'url', 'tag'] as const)
            expect(m[k].length).toBeLessThanOrEqual(PUSH_MESSAGE_LIMITS[k]);
          if (m.action_token !== undefined) expect(m.kind).toBe('approval');
        },
      ),
      { seed: SEED, numRuns: 5000 },
    );
  });
});
