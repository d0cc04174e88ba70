import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

type HopTrace = typeof import('./hop-trace');

/** The module as a process started with `SKALD_HOP_TRACE=<file>` loads it. */
function load(file: string): HopTrace {
  const saved = process.env.SKALD_HOP_TRACE;
  process.env.SKALD_HOP_TRACE = file;
  try {
    let mod: HopTrace | undefined;
    jest.isolateModules(() => {
      mod = jest.requireActual<HopTrace>('./hop-trace');
    });
    return mod!;
  } finally {
    if (saved === undefined) delete process.env.SKALD_HOP_TRACE;
    else process.env.SKALD_HOP_TRACE = saved;
  }
}

describe('hop trace', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'hop-trace-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('off (no file named): marks nothing', () => {
    const h = load('');
    expect(h.hopTraceOn).toBe(false);
    h.hopMark('ws.frame');
    h.hopTraceFlush();
  });

  it('on: writes each mark as "<µs> <pid> <app> <point> <detail>", in order, on the monotonic clock', () => {
    const file = path.join(dir, 'marks.txt');
    const h = load(file);
    expect(h.hopTraceOn).toBe(true);
    h.hopTraceApp('gateway-0-1');
    const before = process.hrtime.bigint() / 1000n;
    h.hopMark('ws.frame');
    h.hopMark('nats.write', 'pass:12');
    const after = process.hrtime.bigint() / 1000n;
    h.hopTraceFlush();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    expect(lines.map((l) => l.slice(1))).toEqual([
      [String(process.pid), 'gateway-0-1', 'ws.frame', ''],
      [String(process.pid), 'gateway-0-1', 'nats.write', 'pass:12'],
    ]);
    const [a, b] = lines.map((l) => BigInt(l[0]));
    expect(a >= before && a <= b && b <= after).toBe(true);
    // written once: a second flush appends only what came after the first
    h.hopMark('ws.uncork');
    h.hopTraceFlush();
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(3);
  });
});
