/**
 * Keeps the first and the last `half` bytes of a stream and counts what falls between, so that an
 * unbounded producer (`yes`) costs bounded memory. Capped while reading, never after.
 */
export class OutputCapture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private omitted = 0;

  constructor(private readonly maxBytes = 100 * 1024) {}

  /** Captures a command's stdout and stderr as they are read, passing each chunk on to `onOutput`. */
  follow(
    stdout: NodeJS.ReadableStream,
    stderr: NodeJS.ReadableStream,
    onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void,
  ): void {
    for (const [name, stream] of [
      ['stdout', stdout],
      ['stderr', stderr],
    ] as const) {
      stream.on('data', (chunk: Buffer) => {
        this.push(chunk);
        onOutput?.(name, chunk);
      });
      stream.on('error', () => undefined);
    }
  }

  push(chunk: Buffer): void {
    const half = Math.floor(this.maxBytes / 2);
    if (this.headBytes < half) {
      const take = Math.min(half - this.headBytes, chunk.length);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    const tailCap = this.maxBytes - half;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tailBytes > tailCap) {
      const first = this.tail[0];
      const excess = this.tailBytes - tailCap;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.omitted += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.omitted += excess;
      }
    }
  }

  get omittedBytes(): number {
    return this.omitted;
  }

  /**
   * The captured text; when bytes were dropped, the head and the tail are cut at character
   * boundaries and joined by the line `[output truncated: N bytes omitted]` (N counts every byte
   * not shown).
   */
  text(): string {
    const head = Buffer.concat(this.head);
    const tail = Buffer.concat(this.tail);
    if (this.omitted === 0) return Buffer.concat([head, tail]).toString('utf8');
    const headEnd = completeUtf8Prefix(head);
    const tailStart = continuationBytes(tail);
    const omitted = this.omitted + (head.length - headEnd) + tailStart;
    const headText = head.subarray(0, headEnd).toString('utf8');
    const tailText = tail.subarray(tailStart).toString('utf8');
    return `${headText}${headText === '' || headText.endsWith('\n') ? '' : '\n'}[output truncated: ${omitted} bytes omitted]\n${tailText}`;
  }
}

/** Length of the longest prefix of `buf` that ends on a UTF-8 character boundary. */
function completeUtf8Prefix(buf: Buffer): number {
  for (let back = 1; back <= Math.min(4, buf.length); back++) {
    const b = buf[buf.length - back];
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? buf.length - back : buf.length;
  }
  return buf.length;
}

/** Continuation bytes at the start of `buf` (the rest of a character cut off before it), at most 3. */
function continuationBytes(buf: Buffer): number {
  let n = 0;
  while (n < 3 && n < buf.length && (buf[n] & 0xc0) === 0x80) n++;
  return n;
}

/** A text cut to `maxBytes` the way command output is: head, the truncation line, tail. */
export function capText(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const capture = new OutputCapture(maxBytes);
  capture.push(Buffer.from(text));
  return capture.text();
}
