import { Injectable, Optional } from '@nestjs/common';
import { StringDecoder } from 'node:string_decoder';
import { EphemeralEvent, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';

export type ProgressEvent = Extract<EphemeralEvent, { type: 'tool_progress' }>;

/** Where live output goes: `ephemeral.<userId>.<sessionId>` (an adapter, so tests can swap it). */
@Injectable()
export class ProgressSink {
  constructor(@Optional() private readonly bus?: Bus) {}

  publish(userId: string, event: ProgressEvent): void {
    this.bus?.publish(topicOf('ephemeralEvents', userId, event.session_id), event);
  }
}

export interface CoalescerOptions {
  /** Flush at most this often (ms). */
  intervalMs: number;
  /** Flush early when this many characters are buffered. */
  maxChunkChars: number;
  /** Stop sending after this many characters in all (the final result carries the whole output). */
  maxTotalChars: number;
}

export const PROGRESS_DEFAULTS: CoalescerOptions = {
  intervalMs: 200,
  maxChunkChars: 16 * 1024,
  maxTotalChars: 256 * 1024,
};

/**
 * Turns a command's raw output into few `tool_progress` events: chunks of one stream are decoded
 * as UTF-8 without splitting characters, buffered and sent at most every `intervalMs` (or when a
 * buffer grows large), and the total is capped so that `yes` cannot flood the broker.
 */
export class ProgressCoalescer {
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private pending: { stream: 'stdout' | 'stderr'; text: string } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;
  private capped = false;

  constructor(
    private readonly emit: (stream: 'stdout' | 'stderr', chunk: string) => void,
    private readonly options: CoalescerOptions = PROGRESS_DEFAULTS,
  ) {}

  push(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    if (this.capped) return;
    const text = this.decoders[stream].write(chunk);
    if (text === '') return;
    if (this.pending && this.pending.stream !== stream) this.flush();
    if (this.pending) this.pending.text += text;
    else this.pending = { stream, text };
    if (this.pending.text.length >= this.options.maxChunkChars) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.intervalMs);
  }

  /** Sends what is buffered (called at the end of the command too). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const p = this.pending;
    this.pending = null;
    if (!p || this.capped) return;
    let text = p.text;
    const room = this.options.maxTotalChars - this.sent;
    if (text.length >= room) {
      text = `${text.slice(0, Math.max(0, room))}\n[live output stopped; the result will show the output]\n`;
      this.capped = true;
    }
    this.sent += text.length;
    this.emit(p.stream, text);
  }

  close(): void {
    this.flush();
  }
}
