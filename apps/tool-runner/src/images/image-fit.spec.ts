import fc from 'fast-check';
import sharp from 'sharp';
import { fitImage, ImageRefused, MAX_INPUT_PIXELS } from './image-fit';
import { bombPng } from '../testing-fixtures/bomb-png';

const LIMITS = { maxSide: 512, maxBytes: 200_000 };

async function png(width: number, height: number, color = '#3366cc'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: color } })
    .png()
    .toBuffer();
}

/** Noise does not compress: it makes the bytes limit bite. */
async function noise(width: number, height: number, seed: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < raw.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    raw[i] = x & 0xff;
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

describe('fitImage', () => {
  it('fits any image to the longest side, never enlarging it, as a JPEG the bytes decode to', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1500 }),
        fc.integer({ min: 1, max: 1500 }),
        fc.constantFrom<Array<'png' | 'jpeg' | 'webp' | 'gif'>>('png', 'jpeg', 'webp', 'gif'),
        async (width, height, format) => {
          const input = await sharp({ create: { width, height, channels: 3, background: '#884422' } })
            .toFormat(format)
            .toBuffer();
          const out = await fitImage(input, LIMITS);
          const meta = await sharp(out.data).metadata();
          const longest = Math.min(LIMITS.maxSide, Math.max(width, height));
          expect(meta.format).toBe('jpeg');
          expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBe(longest);
          expect([meta.width, meta.height]).toEqual([out.width, out.height]);
          expect(out.data.length).toBeLessThanOrEqual(LIMITS.maxBytes);
        },
      ),
      { seed: 40, numRuns: 25 },
    );
  });

  it('keeps to the bytes limit by lowering quality, then size', async () => {
    const input = await noise(1200, 900, 7);
    const out = await fitImage(input, { maxSide: 1200, maxBytes: 60_000 });
    expect(out.data.length).toBeLessThanOrEqual(60_000);
    const meta = await sharp(out.data).metadata();
    expect(meta.width).toBe(out.width);
    expect(out.width).toBeLessThan(1200);
    expect(out.width / out.height).toBeCloseTo(1200 / 900, 1);
  });

  it('refuses a decompression bomb from its header, before decoding it', async () => {
    const bomb = bombPng(100_000, 100_000);
    expect(bomb.length).toBeLessThan(100);
    const started = Date.now();
    await expect(fitImage(bomb, LIMITS)).rejects.toThrow(
      new ImageRefused(
        `it is 100000×100000 pixels, more than the ${MAX_INPUT_PIXELS.toLocaleString('en-US')} decoded pixels an image may have`,
      ),
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('refuses a truncated image and corrupt bytes', async () => {
    const whole = await noise(300, 300, 3);
    await expect(fitImage(whole.subarray(0, Math.floor(whole.length / 2)), LIMITS)).rejects.toThrow(ImageRefused);
    const corrupt = Buffer.from(whole);
    corrupt.fill(0x41, 40, corrupt.length - 20);
    await expect(fitImage(corrupt, LIMITS)).rejects.toThrow(ImageRefused);
  });

  it('refuses what is not an image, whatever its name says', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 2000 }), async (bytes) => {
        await expect(fitImage(Buffer.from(bytes), LIMITS)).rejects.toThrow(ImageRefused);
      }),
      { seed: 41, numRuns: 50 },
    );
    await expect(fitImage(Buffer.from('%PDF-1.7\n%…not a png at all'), LIMITS)).rejects.toThrow(
      /not an image|not a PNG/,
    );
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
    await expect(fitImage(svg, LIMITS)).rejects.toThrow('it is a svg file, not a PNG, JPEG, WebP or GIF image');
  });

  it('gives the first frame of an animated GIF', async () => {
    const red = await png(40, 30, '#ff0000');
    const blue = await png(40, 30, '#0000ff');
    const gif = await sharp([red, blue], { join: { animated: true } })
      .gif()
      .toBuffer();
    const inMeta = await sharp(gif).metadata();
    expect(inMeta.pages).toBe(2);
    const out = await fitImage(gif, LIMITS);
    expect([out.width, out.height]).toEqual([40, 30]);
    const { data } = await sharp(out.data).raw().toBuffer({ resolveWithObject: true });
    expect(data[0]).toBeGreaterThan(200); // red
    expect(data[2]).toBeLessThan(60);
  });

  it('turns the image upright by its EXIF orientation and strips EXIF, GPS, XMP and ICC', async () => {
    const jpeg = await sharp({ create: { width: 80, height: 40, channels: 3, background: '#00aa00' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .withExifMerge({
        IFD0: { Artist: 'someone', Copyright: 'secret place' },
        IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '59/1 20/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '18/1 4/1 0/1' },
      })
      .toBuffer();
    const inMeta = await sharp(jpeg).metadata();
    expect(inMeta.orientation).toBe(6);
    expect(inMeta.exif?.length).toBeGreaterThan(0);
    expect(inMeta.exif?.toString('latin1')).toContain('secret place');
    const out = await fitImage(jpeg, LIMITS);
    const meta = await sharp(out.data).metadata();
    expect(meta.exif).toBeUndefined();
    expect(meta.xmp).toBeUndefined();
    expect(meta.icc).toBeUndefined();
    expect(meta.orientation).toBeUndefined();
    expect([meta.width, meta.height]).toEqual([40, 80]);
    expect(out.data.toString('latin1')).not.toContain('secret place');
    expect(out.data.toString('latin1')).not.toContain('Exif');
  });
});
