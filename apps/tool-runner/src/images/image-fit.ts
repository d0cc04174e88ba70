import sharp, { type Metadata } from 'sharp';

/**
 * Images made ready for a vision model with sharp (libvips): decoded off the event loop (libuv's
 * thread pool), the first frame of an animation, turned upright by its EXIF orientation, fitted
 * to the client's longest side, re-encoded as JPEG (lower quality, then fewer pixels, until it fits
 * the client's bytes) with every metadata block dropped (EXIF, GPS, XMP, ICC: sharp writes none
 * unless asked to).
 */

/** What the model takes (the client's `vision` limits). */
export interface ImageLimits {
  maxSide: number;
  maxBytes: number;
}

export interface FittedImage {
  mime: 'image/jpeg';
  width: number;
  height: number;
  data: Buffer;
  /** The source as sharp read its header. */
  source: { format: string; width: number; height: number };
}

/** An image the model cannot be given, and why (the sentence the model reads). */
export class ImageRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageRefused';
  }
}

/** The formats given to a vision model (a GIF as its first frame). */
export const IMAGE_FORMATS: readonly string[] = ['png', 'jpeg', 'webp', 'gif'];

/** Decoded pixels an input may have (width × height): a decompression bomb is refused from its header. */
export const MAX_INPUT_PIXELS = 50_000_000;
/** Wall time of one decode and encode (sharp's own timeout). */
export const FIT_TIMEOUT_SECONDS = 20;
/** JPEG qualities tried, then the same with the sides shrunk by `SHRINK` each time. */
const QUALITIES = [85, 70, 55, 40];
const SHRINK = 0.75;
/** Shrinks tried at the lowest quality before giving up (the loop is bounded). */
const MAX_SHRINKS = 8;

/** Header facts of an image (no pixels decoded). */
export async function describeImage(input: Buffer): Promise<{ format: string; width: number; height: number }> {
  let meta: Metadata;
  try {
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch {
    throw new ImageRefused('it is not an image in a format this service reads (PNG, JPEG, WebP or GIF)');
  }
  const format = meta.format ?? 'unknown';
  if (!IMAGE_FORMATS.includes(format)) {
    throw new ImageRefused(`it is a ${format} file, not a PNG, JPEG, WebP or GIF image`);
  }
  const width = meta.width ?? 0;
  const height = meta.pageHeight && meta.pages && meta.pages > 1 ? meta.pageHeight : (meta.height ?? 0);
  if (width <= 0 || height <= 0) throw new ImageRefused('its header names no size');
  return { format, width, height };
}

/** `input` fitted to `limits`, or `ImageRefused` naming why it cannot be. */
export async function fitImage(input: Buffer, limits: ImageLimits): Promise<FittedImage> {
  const source = await describeImage(input);
  if (source.width * source.height > MAX_INPUT_PIXELS) {
    throw new ImageRefused(
      `it is ${source.width}×${source.height} pixels, more than the ${MAX_INPUT_PIXELS.toLocaleString('en-US')} decoded pixels an image may have`,
    );
  }
  let side = limits.maxSide;
  for (let shrink = 0; shrink <= MAX_SHRINKS; shrink++) {
    const qualities = shrink === 0 ? QUALITIES : QUALITIES.slice(-1);
    for (const quality of qualities) {
      const out = await encode(input, side, quality);
      if (out.data.length <= limits.maxBytes) return { mime: 'image/jpeg', ...out, source };
    }
    // Never enlarged: shrink from the side the image actually has.
    side = Math.max(16, Math.floor(Math.min(side, Math.max(source.width, source.height)) * SHRINK));
  }
  throw new ImageRefused(`it does not fit in ${limits.maxBytes} bytes even at a small size`);
}

async function encode(
  input: Buffer,
  side: number,
  quality: number,
): Promise<{ width: number; height: number; data: Buffer }> {
  try {
    const { data, info } = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, pages: 1, failOn: 'truncated' })
      .timeout({ seconds: FIT_TIMEOUT_SECONDS })
      .rotate()
      .resize({ width: side, height: side, fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality, mozjpeg: false })
      .toBuffer({ resolveWithObject: true });
    return { width: info.width, height: info.height, data };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (/timeout/i.test(message)) throw new ImageRefused(`decoding it took longer than ${FIT_TIMEOUT_SECONDS} s`);
    throw new ImageRefused('it is corrupt or truncated and cannot be decoded');
  }
}
