import { hostname } from 'node:os';
import pino, { DestinationStream, Logger } from 'pino';
import { logIdsOf } from './log-ids';

export type { Logger } from 'pino';

/** Keys whose values never reach a log line. */
const REDACT = [
  'password',
  '*.password',
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'secret',
  '*.secret',
  'headers.authorization',
  'req.headers.authorization',
  'env',
  '*.env',
];

/** Bytes of log lines held in memory while stdout's reader is behind; beyond them a line is dropped and counted. */
export const DEFAULT_LOG_QUEUE_BYTES = 8 * 1024 * 1024;

let droppedLines = 0;

/** Log lines this process dropped (stdout not read fast enough, or closed); `skald_log_lines_dropped_total`. */
export function logLinesDropped(): number {
  return droppedLines;
}

/** What {@link StdoutLogDestination} needs of stdout (a pipe, a file or a TTY as Node opens it). */
export type LogOutput = Pick<NodeJS.WriteStream, 'write' | 'on' | 'once' | 'off' | 'writableLength'>;

/**
 * Log lines to stdout on the calling thread: a line is handed to the kernel by the log call itself
 * (Node writes to a pipe at once when it has room, and to a file synchronously), so a line whose
 * call returned survives a SIGKILL. It replaces pino's default destination (SonicBoom), which wrote
 * through the libuv thread pool: each line cost the thread's write plus the wake-ups to and from it
 * (futex, eventfd, epoll), and lines still queued in it were lost on a crash.
 *
 * A reader that falls behind (a full pipe): Node queues the lines in memory, up to `maxQueuedBytes`;
 * past that a line is dropped and counted ({@link logLinesDropped}), so a stalled reader neither
 * wedges the service nor grows its heap without bound. When the queue has drained, one line says how
 * many were dropped. A closed stdout (EPIPE) is not an error of the service: its lines are counted
 * as dropped.
 */
export class StdoutLogDestination implements DestinationStream {
  private readonly maxQueuedBytes: number;
  private closed = false;
  private unreported = 0;
  /** Writes the line that tells how many lines were dropped (the first logger on this destination). */
  reportDrops: ((droppedLines: number) => void) | null = null;

  constructor(
    private readonly out: LogOutput,
    options: { maxQueuedBytes?: number } = {},
  ) {
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_LOG_QUEUE_BYTES;
    destinations.add(this);
    out.on('error', () => {
      this.closed = true;
    });
    out.on('drain', () => {
      const n = this.unreported;
      if (n === 0 || this.closed) return;
      this.unreported = 0;
      if (this.reportDrops) this.reportDrops(n);
      else this.out.write(`${JSON.stringify({ level: 'warn', droppedLines: n, msg: DROPPED_MSG })}\n`);
    });
  }

  write(line: string): void {
    const queued = this.out.writableLength;
    if (this.closed || (queued > 0 && queued + line.length > this.maxQueuedBytes)) {
      droppedLines++;
      this.unreported++;
      return;
    }
    this.out.write(line);
  }

  /** Resolves when every queued line is written (or stdout is closed), or after `timeoutMs`. */
  flush(timeoutMs: number): Promise<void> {
    if (this.closed || this.out.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.out.off('drain', done);
        this.out.off('error', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.out.once('drain', done);
      this.out.once('error', done);
    });
  }
}

const DROPPED_MSG = 'log lines dropped: stdout was not read fast enough';

/** Every destination made in this process, for {@link flushLogs}. */
const destinations = new Set<StdoutLogDestination>();

let stdoutDestination: StdoutLogDestination | null = null;

/** The process's stdout destination (one per process: it owns stdout's error and drain listeners). */
export function stdoutLogDestination(): StdoutLogDestination {
  stdoutDestination ??= new StdoutLogDestination(process.stdout);
  return stdoutDestination;
}

/**
 * Waits until the log lines queued for stdout are written, at most `timeoutMs`: before a deliberate
 * `process.exit`, which would drop what a slow reader has not taken yet.
 */
export function flushLogs(timeoutMs = 2_000): Promise<void> {
  return Promise.all([...destinations].map((d) => d.flush(timeoutMs))).then(() => undefined);
}

export function instanceName(service: string, configured?: string): string {
  return configured ?? `${service}-${hostname()}-${process.pid}`;
}

/**
 * JSON logs (pino) with the service and instance on every line, and the user, session, turn and
 * tool call ids the logger carries (`loggerWithIds`). Written to stdout by
 * {@link StdoutLogDestination} unless another destination is given.
 */
export function createLogger(
  service: string,
  level: string,
  instance: string,
  destination?: DestinationStream,
): Logger {
  const options = {
    level,
    base: { service, instance },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    // A copy: pino merges the line's own fields into the mixin's object.
    mixin: (_fields: object, _level: number, logger: Logger) => ({ ...logIdsOf(logger) }),
  };
  const out = destination ?? stdoutLogDestination();
  const log = pino(options, out);
  if (out instanceof StdoutLogDestination && out.reportDrops === null)
    out.reportDrops = (droppedLines) => log.warn({ droppedLines }, DROPPED_MSG);
  return log;
}
