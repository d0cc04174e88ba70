import type { ChildProcess } from 'node:child_process';
import { PassThrough, Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

/** A process speaking MCP on its stdin/stdout, already spawned; `kill` ends it and everything it started. */
export interface StdioProcess {
  child: ChildProcess;
  kill(): void;
  /** Resolves when the process has exited. */
  exited: Promise<unknown>;
}

/**
 * The client side of MCP's stdio transport over a process the runner spawned itself (inside the
 * sandbox), with every message bounded while it is read: a line longer than `maxMessageBytes` is
 * never assembled — the server is killed and the connection fails with a clear reason.
 */
export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Why the transport ended, when it was the runner's decision (an oversized message). */
  failure: string | null = null;
  readonly stderr = new PassThrough();
  private chunks: Buffer[] = [];
  private pending = 0;
  private closed = false;

  constructor(
    private readonly proc: StdioProcess,
    private readonly maxMessageBytes: number,
  ) {}

  start(): Promise<void> {
    const { child } = this.proc;
    const stdout = child.stdout as Readable;
    stdout.on('data', (chunk: Buffer) => this.read(chunk));
    stdout.on('error', (e) => this.onerror?.(e));
    (child.stdin as Writable).on('error', (e) => this.onerror?.(e));
    child.stderr?.pipe(this.stderr);
    void this.proc.exited.then(() => this.end());
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.proc.child.stdin;
    if (this.closed || !stdin || stdin.destroyed) return Promise.reject(new Error('the MCP server has exited'));
    return new Promise((resolve) => {
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once('drain', resolve);
    });
  }

  close(): Promise<void> {
    this.proc.kill();
    this.end();
    return Promise.resolve();
  }

  /** Splits the stream into lines, never holding more than `maxMessageBytes` of one. */
  private read(chunk: Buffer): void {
    let at = 0;
    while (!this.closed && at < chunk.length) {
      const nl = chunk.indexOf(0x0a, at);
      const end = nl === -1 ? chunk.length : nl;
      this.pending += end - at;
      if (this.pending > this.maxMessageBytes) {
        this.failure = `the MCP server sent a message of more than ${this.maxMessageBytes} bytes; it was stopped`;
        this.onerror?.(new Error(this.failure));
        void this.close();
        return;
      }
      this.chunks.push(chunk.subarray(at, end));
      if (nl === -1) return;
      const line = Buffer.concat(this.chunks).toString('utf8').replace(/\r$/, '');
      this.chunks = [];
      this.pending = 0;
      at = nl + 1;
      if (line.trim() === '') continue;
      let message: JSONRPCMessage;
      try {
        message = JSONRPCMessageSchema.parse(JSON.parse(line));
      } catch (e) {
        this.onerror?.(e instanceof Error ? e : new Error(String(e)));
        continue;
      }
      this.onmessage?.(message);
    }
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.chunks = [];
    this.onclose?.();
  }
}
