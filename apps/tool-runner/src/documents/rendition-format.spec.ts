import fc from 'fast-check';
import { parse, renditionOf, serialize, stampOf } from './rendition-format';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

describe('rendition format', () => {
  const stamp = stampOf({
    ino: 12n,
    size: 3400n,
    mtimeNs: 1_700_000_000_000_000_001n,
    ctimeNs: 1_700_000_000_000_000_002n,
  });

  it('names the document, its pages and that the text was cut', () => {
    const r = renditionOf('/workspace/uploads/a.pdf', 'pdf', {
      ok: true,
      text: '--- page 1 of 1 ---\nhi\n',
      units: 1,
      truncated: true,
    });
    expect(r).toEqual({
      ok: true,
      text:
        '[text of the PDF /workspace/uploads/a.pdf, 1 page, extracted by Skald; the file itself is binary]\n' +
        '--- page 1 of 1 ---\nhi\n\n[text cut here: the rest of the document is longer than the extraction limit]\n',
    });
    expect(renditionOf('/workspace/b.docx', 'docx', { ok: true, text: 'x', units: null, truncated: false })).toEqual({
      ok: true,
      text: '[text of the Word document /workspace/b.docx, extracted by Skald; the file itself is binary]\nx',
    });
  });

  it('reads back exactly what it stored, for the same content only', () => {
    console.log(`rendition format seed ${SEED} (replay: FC_SEED=${SEED})`);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({ ok: fc.constant(true as const), text: fc.string({ unit: 'binary' }) }),
          fc.record({ ok: fc.constant(false as const), reason: fc.string({ unit: 'binary' }) }),
        ),
        fc.string(),
        (r, other) => {
          const stored = serialize(stamp, r);
          expect(parse(stored, stamp)).toEqual(r);
          if (other !== stamp) expect(parse(stored, other)).toBeNull();
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('ignores anything that is not a rendition it wrote', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (junk) => {
        const r = parse(junk, stamp);
        expect(r).toBeNull();
      }),
      { seed: SEED, numRuns: 500 },
    );
    expect(parse(`#skald-text-rendition {"stamp":"${stamp}"`, stamp)).toBeNull();
    expect(parse('#skald-text-rendition not json\ntext', stamp)).toBeNull();
  });
});
