import { hopMark } from '@skald/messaging/hop-trace';
import type { DataSource } from 'typeorm';

/** Hop trace: marks when the pool hands a client out and when a client's socket has data (once per pool). */
const tracedPools = new WeakSet<object>();
export function tracePool(ds: DataSource): void {
  const pool = (ds.driver as unknown as { master?: { on(ev: 'acquire', fn: (c: unknown) => void): void } }).master;
  if (!pool || tracedPools.has(pool)) return;
  tracedPools.add(pool);
  const streams = new WeakSet<object>();
  pool.on('acquire', (client) => {
    hopMark('pg.acquire');
    const stream = (client as { connection?: { stream?: { on(ev: 'data', fn: (b: Buffer) => void): void } } })
      .connection?.stream;
    if (!stream || streams.has(stream)) return;
    streams.add(stream);
    stream.on('data', (b) => hopMark('pg.read', b.length));
  });
}
