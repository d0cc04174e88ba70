import { appendFileSync } from 'node:fs';

/**
 * Hop trace: named time marks on the machine's monotonic clock (`process.hrtime`, CLOCK_MONOTONIC,
 * the same clock in every process of the machine), so that one message's way through the stack —
 * client → gateway → NATS → worker → Postgres → NATS → gateway → client — can be put on one
 * timeline (`scripts/bench/echo-trace.js --hops`).
 *
 * Off unless `SKALD_HOP_TRACE` names a file: then each mark is kept in memory and appended to that
 * file as `<µs> <pid> <app> <point> <detail>` lines every second (from a timer, so never on the path
 * it measures, unless the timer happens to fire there) and at exit. Off, a mark is one test of a
 * constant.
 */
const FILE = process.env.SKALD_HOP_TRACE || '';
export const hopTraceOn = FILE !== '';

let app = '';
let lines: string[] = [];
let timer: NodeJS.Timeout | null = null;

/** Appends the marks kept so far to the file (the periodic write and the exit do it too). */
export function hopTraceFlush(): void {
  if (lines.length === 0) return;
  const out = lines.join('');
  lines = [];
  try {
    appendFileSync(FILE, out);
  } catch {
    // a trace that cannot be written is lost, never the process
  }
}

/** Names this process's marks (the app); the first call starts the periodic write. */
export function hopTraceApp(name: string): void {
  app = name;
}

/** Records `point` (and a short `detail`, e.g. a byte count or a subject) at the present instant. */
export function hopMark(point: string, detail: string | number = ''): void {
  if (!hopTraceOn) return;
  const us = process.hrtime.bigint() / 1000n;
  lines.push(`${us} ${process.pid} ${app || process.title} ${point} ${detail}\n`);
  if (timer === null) {
    timer = setInterval(hopTraceFlush, 1000);
    timer.unref();
    process.once('exit', hopTraceFlush);
  }
}
