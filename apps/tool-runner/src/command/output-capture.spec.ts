import fc from 'fast-check';
import { OutputCapture } from './output-capture';

describe('OutputCapture', () => {
  it('keeps everything under the cap', () => {
    const c = new OutputCapture(100);
    c.push(Buffer.from('hello '));
    c.push(Buffer.from('world'));
    expect(c.text()).toBe('hello world');
    expect(c.omittedBytes).toBe(0);
  });

  it('keeps the head and the tail and says how many bytes it dropped', () => {
    const c = new OutputCapture(20);
    for (let i = 0; i < 100; i++) c.push(Buffer.from(`${i % 10}`.repeat(10)));
    expect(c.omittedBytes).toBe(1000 - 20);
    expect(c.text()).toBe('0000000000\n[output truncated: 980 bytes omitted]\n9999999999');
  });
});

describe('OutputCapture, any output', () => {
  const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
  const LINE = /\[output truncated: (\d+) bytes omitted\]\n/;

  it('shows at most the cap, says how many bytes it left out, and never cuts a character in two', () => {
    console.log(`output capture: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    fc.assert(
      fc.property(
        fc.integer({ min: 4, max: 64 }),
        fc.array(fc.string({ unit: 'grapheme', maxLength: 20 }), { maxLength: 30 }),
        (cap, chunks) => {
          const c = new OutputCapture(cap);
          for (const chunk of chunks) c.push(Buffer.from(chunk));
          const total = chunks.reduce((n, s) => n + Buffer.byteLength(s), 0);
          const out = c.text();
          const m = LINE.exec(out);
          if (total <= cap) return out === chunks.join('') && m === null;
          if (m === null) return false;
          if (out.includes('\ufffd') && !chunks.some((s) => s.includes('\ufffd'))) return false;
          // Shown bytes, counting the separator newline that may precede the line.
          const shown = Buffer.byteLength(out.slice(0, m.index)) + Buffer.byteLength(out.slice(m.index + m[0].length));
          const sum = Number(m[1]) + shown;
          return shown - 1 <= cap && (sum === total || sum === total + 1);
        },
      ),
      { seed: SEED, numRuns: 2_000 },
    );
  });
});
