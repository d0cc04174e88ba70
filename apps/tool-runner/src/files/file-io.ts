import { FileHandle } from 'node:fs/promises';
import { ToolError } from '../tool-error';
import type { WorkspacePath } from '../workspace/workspace-path';
import { formatBytes } from '../workspace/workspaces.service';
import { looksBinary } from './text';

// Reading and writing a file through its descriptor (the jail opened it), whole and in place.

/** A file's bytes as text, or the error the model reads for a binary file. */
export function asText(buf: Buffer, size: number, p: WorkspacePath, tool: string): string {
  if (looksBinary(buf)) {
    throw new ToolError(
      'binary',
      `${tool}: ${p.virtual} is a binary file (${formatBytes(size)}); only text files can be read`,
    );
  }
  return buf.toString('utf8');
}

/**
 * Reads at most `max` bytes from offset 0 into a buffer sized for the `expected` size (one byte
 * more, to notice growth): a file that grew since its stat is read on, doubling, up to `max`.
 */
export async function readUpTo(handle: FileHandle, max: number, expected = max): Promise<Buffer> {
  let buf = Buffer.allocUnsafe(Math.max(1, Math.min(max, expected + 1)));
  let got = await readInto(handle, buf);
  while (got === buf.length && buf.length < max) {
    const bigger = Buffer.allocUnsafe(Math.min(max, buf.length * 2));
    buf.copy(bigger, 0, 0, got);
    buf = bigger;
    got = await readInto(handle, buf, got);
  }
  return buf.subarray(0, got);
}

/** Fills `buf` from file offset `from` (= buffer offset; less at end of file); answers the bytes in it. */
export async function readInto(handle: FileHandle, buf: Buffer, from = 0): Promise<number> {
  let got = from;
  while (got < buf.length) {
    const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

/** Writes all of `data` at offset 0 (the caller truncates after it). */
export async function writeAllAt0(handle: FileHandle, data: Buffer): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, done);
    done += bytesWritten;
  }
}
