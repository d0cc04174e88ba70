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

  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    if (this.omitted === 0) return head + tail;
    return `${head}${head.endsWith('\n') ? '' : '\n'}[output truncated: ${this.omitted} bytes omitted]\n${tail}`;
  }
}
