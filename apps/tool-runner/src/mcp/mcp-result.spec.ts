import fc from 'fast-check';
import { OUTPUT_MAX_BYTES } from '../command/plain-command.runner';
import { resultText } from './mcp-result';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const LINE = /\n\[output truncated: (\d+) bytes omitted\]\n/;

/** PROTOCOL.md: output over the cap is cut with a line `[output truncated: N bytes omitted]`. */
describe('MCP tool results over the output cap', () => {
  it('carry the protocol line with the number of bytes omitted, and keep the head and the tail', () => {
    const text = `HEAD${'x'.repeat(OUTPUT_MAX_BYTES * 2)}TAIL`;
    const out = resultText({ content: [{ type: 'text', text }] });
    const m = LINE.exec(out);
    expect(m).not.toBeNull();
    expect(out.startsWith('HEAD')).toBe(true);
    expect(out.endsWith('TAIL')).toBe(true);
    const kept = Buffer.byteLength(out) - Buffer.byteLength(m![0]);
    expect(Number(m![1])).toBe(Buffer.byteLength(text) - kept);
  });

  it('any result: the line appears exactly when the text is over the cap, and N is what was dropped', () => {
    console.log(`mcp result cap: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: OUTPUT_MAX_BYTES + 2_000 }),
        fc.constantFrom('a', 'é', '😀', '\n'),
        (n, unit) => {
          const text = unit.repeat(Math.ceil(n / Buffer.byteLength(unit)));
          const out = resultText({ content: [{ type: 'text', text }] });
          const m = LINE.exec(out);
          if (Buffer.byteLength(text) <= OUTPUT_MAX_BYTES) return out === text;
          return m !== null && Number(m[1]) > 0 && Buffer.byteLength(out) - m[0].length <= OUTPUT_MAX_BYTES;
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });
});
