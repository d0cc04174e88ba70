import fc from 'fast-check';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readUpTo } from './file-io';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`readUpTo: seed ${SEED} (FC_SEED=${SEED} replays)`);

describe('readUpTo', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'read-up-to-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  // The buffer is sized for the size a stat saw; the file may have grown or shrunk since. Whatever
  // the two sizes, the answer is the file's first `max` bytes.
  it('answers the first max bytes whatever size the caller expected', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 5000 }),
        fc.nat({ max: 6000 }),
        fc.integer({ min: 1, max: 6000 }),
        async (bytes, expected, max) => {
          const file = join(dir, 'f');
          await writeFile(file, bytes);
          const handle = await open(file, 'r');
          try {
            const got = await readUpTo(handle, max, expected);
            expect(Buffer.compare(got, Buffer.from(bytes.subarray(0, max)))).toBe(0);
          } finally {
            await handle.close();
          }
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  }, 60_000);

  it('allocates for the expected size, not the limit', async () => {
    const file = join(dir, 'small');
    await writeFile(file, 'abc');
    const handle = await open(file, 'r');
    try {
      const got = await readUpTo(handle, 10 * 1024 * 1024, 3);
      expect(got.toString()).toBe('abc');
      // A small result may sit in Node's shared pool slab (Buffer.poolSize: 8 KiB on Node 20, 64 KiB on Node 26):
      // what counts is that no buffer of the 10 MiB limit was taken.
      expect(got.buffer.byteLength).toBeLessThan(Math.max(64 * 1024, 2 * Buffer.poolSize));
    } finally {
      await handle.close();
    }
  });
});
