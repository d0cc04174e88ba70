import fc from 'fast-check';
import { StoredText } from './common';
import { CreateTokenRequest } from './rest';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

/** What Postgres text can hold, judged by Node's own UTF-8 encoder: a lone surrogate does not survive it. */
const storable = (t: string) => !t.includes('\0') && Buffer.from(t, 'utf8').toString('utf8') === t;

describe('StoredText', () => {
  it('accepts exactly the strings UTF-8 round-trips without a NUL byte (generated, with NUL and lone surrogates)', () => {
    const unit = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 8 }),
      fc.constantFrom('\0', '\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uD83D\uDE00', '\u200F', '\u2028'),
    );
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 6 }), (parts) => {
        const t = parts.join('');
        return StoredText(1000).safeParse(t).success === storable(t);
      }),
      { seed, numRuns: 5000 },
    );
  });

  it('an API token name with a NUL byte is refused, naming why', () => {
    const r = CreateTokenRequest.safeParse({ name: 'cli\u0000' });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain('NUL');
  });
});
