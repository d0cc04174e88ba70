/**
 * A message's header block is the publisher's bytes: the Bus reads trace context and the sent-at
 * stamp from it, and neither may cost the message. Over a real NATS server, frames written on a raw
 * socket (`HPUB`) carry generated header blocks — keys with spaces, colons, control characters,
 * non-ASCII, stray CR/LF, bare status lines — and a valid body: `subscribe` still hands every body
 * on in order, `handle` still answers every request, and nothing escapes into the NATS client's read
 * loop (which would take the connection, and the service, down).
 */
import { randomUUID } from 'node:crypto';
import * as net from 'node:net';
import fc from 'fast-check';
import { PrivateNats } from '@skald/testing';
import { z } from 'zod';
import { NatsBus } from './bus';

const te = new TextEncoder();

/** A raw NATS client: CONNECT with headers on, then whatever frames the test writes. */
async function rawClient(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('data', () => resolve()); // INFO
    socket.once('error', reject);
  });
  socket.write('CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n');
  return socket;
}

/** `HPUB <subject> [reply] <header bytes> <total bytes>` with the header block and body as given. */
function hpub(subject: string, reply: string | null, header: Uint8Array, body: Uint8Array): Buffer {
  const head = `HPUB ${subject}${reply ? ` ${reply}` : ''} ${header.length} ${header.length + body.length}\r\n`;
  return Buffer.concat([Buffer.from(head), header, body, Buffer.from('\r\n')]);
}

/** Header lines an attacker with publish rights could send (each becomes one line of the block). */
const hostileLine = fc.oneof(
  fc.string({ unit: fc.constantFrom('a', 'B', ' ', ':', '-', '\t', '\u00a0', 'é', '\u0000', '\u001b', '/', '=') }),
  fc.constantFrom(
    'Bad Key: v',
    'traceparent: 00-zz-yy-01',
    'traceparent: ' + 'f'.repeat(2_000),
    'skald-sent-at: not a number',
    'skald-sent-at: 1e400',
    ': no key',
    'NATS/1.0 503',
    'NATS/1.0 abc def',
    'Ünïcode-Key: x',
  ),
);
/** A header block: a status line (the right one or not), hostile lines, the blank line that ends it. */
const hostileBlock = fc
  .tuple(
    fc.constantFrom('NATS/1.0', 'NATS/1.0 404 x', 'NATS/1.0 ', 'HTTP/1.1', ''),
    fc.array(hostileLine, { maxLength: 6 }),
  )
  .map(([status, lines]) =>
    te.encode([status, ...lines.map((l) => l.replace(/[\r\n]/g, ''))].join('\r\n') + '\r\n\r\n'),
  );

describe('NatsBus: hostile header blocks', () => {
  let nats: PrivateNats;
  let bus: NatsBus;
  const logged: string[] = [];
  const log = {
    warn: (_o: object, m: string) => void logged.push(m),
    error: (_o: object, m: string) => void logged.push(m),
  };

  beforeAll(async () => {
    nats = await PrivateNats.start();
    bus = await NatsBus.connect({ servers: nats.url, name: `bus-hostile-headers-${randomUUID()}` }, log);
  });
  afterAll(async () => {
    await bus?.drain();
    await nats?.destroy();
  });

  const blocks = fc.sample(hostileBlock, { seed: 190_012, numRuns: 2_000 });

  it('subscribe hands on every valid body, whatever its header block, in order', async () => {
    const subject = `bus-hostile.${randomUUID()}`;
    const got: number[] = [];
    bus.subscribeUnkeyed(subject, z.object({ n: z.number() }), (m) => void got.push(m.n));
    await bus.nc.flush();
    const raw = await rawClient(nats.port);
    raw.write(Buffer.concat(blocks.map((h, n) => hpub(subject, null, h, te.encode(JSON.stringify({ n }))))));
    for (let i = 0; i < 1_000 && got.length < blocks.length; i++) await new Promise((r) => setTimeout(r, 10));
    raw.destroy();
    expect(got).toEqual(blocks.map((_h, n) => n));
    expect(bus.nc.isClosed()).toBe(false);
  }, 30_000);

  it('handle answers every request, whatever its header block', async () => {
    bus.handle('session.rename', async (req) => ({ session_id: req.session_id, title: req.title }) as never);
    await bus.nc.flush();
    const raw = await rawClient(nats.port);
    const inbox = `hostile-replies.${randomUUID()}`;
    let answered = 0;
    raw.on('data', (chunk: Buffer) => {
      answered += chunk.toString('latin1').split(`MSG ${inbox}`).length - 1;
    });
    raw.write(`SUB ${inbox} 1\r\n`);
    const body = (i: number) =>
      te.encode(
        JSON.stringify({
          actor: { userId: randomUUID(), role: 'user' },
          session_id: randomUUID(),
          title: `t${i}`,
        }),
      );
    const some = blocks.slice(0, 500);
    raw.write(Buffer.concat(some.map((h, i) => hpub('session.rename', inbox, h, body(i)))));
    for (let i = 0; i < 1_000 && answered < some.length; i++) await new Promise((r) => setTimeout(r, 10));
    raw.destroy();
    expect(answered).toBe(some.length);
    expect(bus.nc.isClosed()).toBe(false);
    expect(logged.filter((m) => m === 'handler failed')).toEqual([]);
  }, 30_000);

  it('a reply with an empty body and any header block fails that request only, clearly', async () => {
    const raw = await rawClient(nats.port);
    const some = blocks.slice(0, 50);
    let next = 0;
    raw.on('data', (chunk: Buffer) => {
      for (const m of chunk.toString('latin1').matchAll(/MSG session\.delete 1 (\S+) \d+\r\n/g)) {
        raw.write(hpub(m[1], null, some[next++ % some.length], new Uint8Array(0)));
      }
    });
    raw.write('SUB session.delete session-worker 1\r\nPING\r\n');
    await new Promise((r) => setTimeout(r, 50));
    const codes = new Set<string>();
    for (let i = 0; i < some.length; i++) {
      const err = await bus
        .request('session.delete', { actor: { userId: randomUUID(), role: 'user' }, session_id: randomUUID() })
        .catch((e: unknown) => e);
      codes.add((err as { code?: string }).code ?? String(err));
    }
    raw.destroy();
    expect(next).toBe(some.length);
    // an empty body is no reply the contract knows (a 503 status line would read as NATS' "no responders")
    expect([...codes].filter((c) => c !== 'bad_reply' && c !== 'no_responders')).toEqual([]);
    expect(codes.has('bad_reply')).toBe(true);
    expect(bus.nc.isClosed()).toBe(false);
  }, 30_000);
});
