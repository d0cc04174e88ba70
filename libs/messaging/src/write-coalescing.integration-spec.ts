/**
 * Coalesced NATS writes (write-coalescing.ts) against the real server: commands queued across many
 * microtask checkpoints of one turn of the event loop go out in one socket write, in order; a lone
 * publish still goes out without anything else happening; a burst past nats.js's flush threshold
 * is written at once; and the internals it patches are the installed client's.
 */
import { randomUUID } from 'node:crypto';
import { connect, NatsConnection, StringCodec } from 'nats';
import { z } from 'zod';
import { PrivateNats } from '@skald/testing';
import { NatsBus } from './bus';
import { coalesceWrites } from './write-coalescing';

const log = { warn: jest.fn(), error: () => undefined };
const sc = StringCodec();

/** Counts the socket writes of a connection (nats.js's transport.send). */
function countWrites(nc: NatsConnection): { count: () => number } {
  const transport = (nc as unknown as { protocol: { transport: { send(b: Uint8Array): void } } }).protocol.transport;
  const send = transport.send.bind(transport);
  let n = 0;
  transport.send = (b: Uint8Array) => {
    n++;
    send(b);
  };
  return { count: () => n };
}

/** Runs `work` from the start of a fresh turn of the event loop and waits until that turn is over. */
async function inOneTurn(work: () => Promise<void>): Promise<void> {
  await new Promise<void>((done, fail) => setImmediate(() => void work().then(done, fail)));
  await new Promise((r) => setImmediate(r));
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

describe('coalesced NATS writes', () => {
  // A NATS server of its own: the handler test below answers `session.rename` in the session
  // workers' queue group, which on a shared server would take (and answer wrongly) another
  // process's requests, and share this test's with any session worker there.
  let nats: PrivateNats;
  let bus: NatsBus;
  let plain: NatsConnection;
  let reader: NatsConnection;
  beforeAll(async () => {
    nats = await PrivateNats.start();
    bus = await NatsBus.connect({ servers: nats.url, name: `coalesce-spec-${randomUUID()}` }, log);
    plain = await connect({ servers: nats.url });
    reader = await connect({ servers: nats.url });
  });
  afterAll(async () => {
    await bus?.drain();
    await plain?.drain();
    await reader?.drain();
    await nats?.destroy();
  });

  it('patches the installed nats.js (the NatsBus did not have to fall back)', () => {
    expect(log.warn).not.toHaveBeenCalled();
  });

  it('publishes after 100 awaits in one turn: one write (the plain client: one per publish), in order per connection', async () => {
    const subject = `coalesce.${randomUUID()}`;
    const got: number[] = [];
    reader.subscribe(subject, {
      callback: (_e, m) => void got.push((JSON.parse(sc.decode(m.data)) as { n: number }).n),
    });
    await reader.flush();
    const schema = z.object({ n: z.number() });

    const ours = countWrites(bus.nc);
    await inOneTurn(async () => {
      for (let i = 0; i < 100; i++) {
        await Promise.resolve();
        bus.publishUnkeyed(subject, schema, { n: i });
      }
    });
    expect(ours.count()).toBe(1);

    const theirs = countWrites(plain);
    await inOneTurn(async () => {
      for (let i = 100; i < 200; i++) {
        await Promise.resolve();
        plain.publish(subject, sc.encode(JSON.stringify({ n: i })));
      }
    });
    expect(theirs.count()).toBeGreaterThanOrEqual(100);

    await until(() => got.length === 200, '200 messages');
    // In order per connection; NATS orders nothing across two connections (the server reads each
    // socket on its own, so the plain client's first messages can arrive before the Bus's one write).
    expect(got.filter((n) => n < 100)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(got.filter((n) => n >= 100)).toEqual(Array.from({ length: 100 }, (_, i) => 100 + i));
  });

  it('a lone publish goes out with nothing else happening', async () => {
    const subject = `coalesce.${randomUUID()}`;
    const got: string[] = [];
    reader.subscribe(subject, { callback: (_e, m) => void got.push(sc.decode(m.data)) });
    await reader.flush();
    bus.publishUnkeyed(subject, z.string(), 'alone');
    await until(() => got.length === 1, 'the lone message');
    expect(got).toEqual(['"alone"']);
  });

  it('a publish with `now` is written at once, with what was queued before it, ahead of the rest of the turn', async () => {
    const subject = `coalesce.${randomUUID()}`;
    const got: number[] = [];
    reader.subscribe(subject, {
      callback: (_e, m) => void got.push((JSON.parse(sc.decode(m.data)) as { n: number }).n),
    });
    await reader.flush();
    const schema = z.object({ n: z.number() });
    const writes = countWrites(bus.nc);
    const seen: number[] = [];
    await inOneTurn(async () => {
      bus.publishUnkeyed(subject, schema, { n: 0 });
      await Promise.resolve();
      bus.publishUnkeyed(subject, schema, { n: 1 }, { now: true });
      // the work that follows in this turn: the two are already on the socket
      seen.push(writes.count());
      for (let i = 2; i < 5; i++) {
        await Promise.resolve();
        bus.publishUnkeyed(subject, schema, { n: i });
      }
      seen.push(writes.count());
    });
    expect(seen).toEqual([1, 1]);
    expect(writes.count()).toBe(2);
    await until(() => got.length === 5, '5 messages');
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });

  it.each([true, false])(
    "a handler's answer goes out in one write with what it queued before: at once with `replyNow` (%s), else at the end of the pass, after the handler's later work",
    async (replyNow) => {
      const server = await NatsBus.connect({ servers: nats.url, name: `coalesce-spec-${randomUUID()}` }, log);
      const client = await NatsBus.connect({ servers: nats.url, name: `coalesce-spec-${randomUUID()}` }, log);
      try {
        const subject = `coalesce.${randomUUID()}`;
        const sessionId = randomUUID();
        const got: string[] = [];
        reader.subscribe(subject, { callback: (_e, m) => void got.push(sc.decode(m.data)) });
        await reader.flush();
        const writes = countWrites(server.nc);
        let atLaterWork = -1;
        server.handle(
          'session.rename',
          async (req) => {
            if (req.session_id !== sessionId) throw new Error('not this spec');
            // the work the handler starts after answering (the submit's turn): the next pass
            setImmediate(() => (atLaterWork = writes.count()));
            server.publishUnkeyed(subject, z.string(), 'echo');
            return { id: sessionId, title: 'answered' };
          },
          { replyNow },
        );
        await server.nc.flush();
        const before = writes.count();
        const reply = await client.call('session.rename', {
          actor: { userId: randomUUID(), role: 'user' },
          session_id: sessionId,
          title: 't',
        });
        expect(reply).toEqual({ id: sessionId, title: 'answered' });
        await until(() => got.length === 1 && atLaterWork >= 0, 'the published message and the later work');
        // with replyNow: the answer and the message left together before the later work ran
        expect(atLaterWork - before).toBe(replyNow ? 1 : 0);
        await new Promise((r) => setImmediate(r));
        expect(writes.count() - before).toBe(1);
        expect(got).toEqual(['"echo"']);
      } finally {
        await server.drain();
        await client.drain();
      }
    },
  );

  it('a burst past the flush threshold is written before the turn ends', () => {
    const writes = countWrites(bus.nc);
    const limit = (bus.nc as unknown as { protocol: { pendingLimit: number } }).protocol.pendingLimit;
    const body = 'x'.repeat(1024);
    for (let i = 0; i * 1024 < limit * 2; i++) bus.publishUnkeyed(`coalesce.${randomUUID()}`, z.string(), body);
    expect(writes.count()).toBeGreaterThanOrEqual(1);
  });

  it('leaves a client whose internals it does not know alone', () => {
    const alien = { protocol: { sendCommand: () => undefined } } as unknown as NatsConnection;
    expect(coalesceWrites(alien)).toBeNull();
    expect(coalesceWrites({} as NatsConnection)).toBeNull();
  });
});
