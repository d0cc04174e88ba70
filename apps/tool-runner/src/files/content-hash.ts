import { createHash } from 'node:crypto';
import { ABSENT_FILE_HASH } from '@skald/contracts';
import { StalePreview } from '../tool-error';

/** The hash a preview records of the file it was computed from: SHA-256 (hex) of its bytes. */
export function contentHash(content: Buffer | string): string {
  return createHash('sha256')
    .update(typeof content === 'string' ? Buffer.from(content, 'utf8') : content)
    .digest('hex');
}

/**
 * Throws `StalePreview` when a write was approved on a preview (`expected` set) and the file is no
 * longer what the preview was computed from. `current` is the file now (null: it does not exist).
 * Call it under the same lock as the write.
 */
export function assertPreviewBase(
  expected: string | undefined,
  current: Buffer | string | null,
  virtual: string,
): void {
  if (expected === undefined) return;
  const now = current === null ? ABSENT_FILE_HASH : contentHash(current);
  if (now !== expected) throw new StalePreview(virtual);
}
