import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import fc from 'fast-check';
import WebSocket, { WebSocketServer } from 'ws';
import type { ConnectionEvent } from '@skald/contracts';
import type { Principal } from '../auth/auth.service';
import { WsConnection } from './ws-connection';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const principal = { actor: { userId: 'u', role: 'user' } } as unknown as Principal;
const tick = () => new Promise<void>((r) => setImmediate(r));
const frame = (i: number) => ({ type: 'command_result', text: `f${i}` }) as unknown as ConnectionEvent;

/** A real socket pair: the server side wrapped in a WsConnection, its writes to the kernel counted. */
async function pair() {
  const wss = new WebSocketServer({ port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const accepted = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: string[] = [];
  client.on('message', (d) => received.push((JSON.parse((d as Buffer).toString()) as { text: string }).text));
  await new Promise<void>((r) => client.once('open', () => r()));
  const server = await accepted;
  const raw = (server as unknown as { _socket: Duplex & { _write: unknown; _writev: unknown } })._socket;
  const writes = { n: 0 };
  for (const m of ['_write', '_writev'] as const) {
    const original = raw[m] as (...a: unknown[]) => unknown;
    raw[m] = function (this: unknown, ...a: unknown[]) {
      writes.n++;
      return original.apply(this, a);
    };
  }
  const conn = new WsConnection(server, principal, 'web', () => Promise.reject(new Error('no replay')));
  const closed = new Promise<number>((r) => client.once('close', (code) => r(code)));
  const stop = async () => {
    client.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  };
  return { conn, server, received, writes, closed, stop };
}

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('WsConnection: the frames of one pass of the event loop leave in one write', () => {
  it('20 frames sent in one pass: one write to the socket, all 20 received in order', async () => {
    const p = await pair();
    try {
      for (let i = 0; i < 20; i++) p.conn.send(frame(i));
      await until(() => p.received.length === 20);
      expect(p.received).toEqual(Array.from({ length: 20 }, (_, i) => `f${i}`));
      expect(p.writes.n).toBe(1);
    } finally {
      await p.stop();
    }
  });

  it('generated batches over several passes: every frame arrives once, in order; one write per pass at most', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 12 }), async (batches) => {
        const p = await pair();
        try {
          let n = 0;
          for (const size of batches) {
            for (let i = 0; i < size; i++) p.conn.send(frame(n++));
            await tick();
          }
          await until(() => p.received.length === n);
          expect(p.received).toEqual(Array.from({ length: n }, (_, i) => `f${i}`));
          expect(p.writes.n).toBeLessThanOrEqual(batches.filter((b) => b > 0).length);
        } finally {
          await p.stop();
        }
      }),
      { seed: SEED, numRuns: 40 },
    );
  });

  it('a close in the same pass as sends: the frames arrive, then the close', async () => {
    const p = await pair();
    try {
      for (let i = 0; i < 3; i++) p.conn.send(frame(i));
      p.server.close(1013, 'bye');
      expect(await p.closed).toBe(1013);
      expect(p.received).toEqual(['f0', 'f1', 'f2']);
    } finally {
      await p.stop();
    }
  });
});
