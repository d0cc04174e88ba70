import type { NatsConnection } from 'nats';
import { hopMark, hopTraceOn } from './hop-trace';

/** The part of nats.js's ProtocolHandler (nats 2.29.x, `nc.protocol`) that queues and writes commands. */
interface ProtocolWrites {
  outbound: { fill(buf: Uint8Array, ...payloads: Uint8Array[]): void; size(): number };
  pendingLimit: number;
  sendCommand(cmd: string | Uint8Array, ...payloads: Uint8Array[]): void;
  flushPending(): void;
}

function protocolOf(nc: NatsConnection): ProtocolWrites | null {
  const p = (nc as unknown as { protocol?: Partial<ProtocolWrites> }).protocol;
  if (
    !p ||
    typeof p.sendCommand !== 'function' ||
    typeof p.flushPending !== 'function' ||
    typeof p.pendingLimit !== 'number' ||
    typeof p.outbound?.fill !== 'function' ||
    typeof p.outbound?.size !== 'function'
  )
    return null;
  return p as ProtocolWrites;
}

const encoder = new TextEncoder();

/**
 * Makes the connection write what it has queued once per turn of the event loop (setImmediate)
 * instead of once per microtask checkpoint. nats.js queues each command (PUB, SUB, UNSUB) in its
 * outbound buffer and writes the buffer to the socket on the next microtask, so every publish or
 * request made after an `await` (each event announcement, each approval check, each tool call, each
 * reply) cost its own socket write: the largest single cost of the NATS client in the session
 * worker's profile. Deferred to the end of the current I/O phase, the commands of every
 * conversation served in that phase go out in one write, in the order they were queued.
 *
 * Unchanged: the buffer is still written at once when it reaches nats.js's flush threshold, and
 * every other write (PING of `flush()`, the pending buffer on (re)connect, drain and close) is
 * nats.js's own. Returns the function that writes what is queued at once (for a message someone
 * waits on: see `Bus.publish`'s `now`), or null, leaving the client as it is, when its internals are
 * not the ones this was written against (the unit spec pins them for the installed version).
 */
export function coalesceWrites(nc: NatsConnection): (() => void) | null {
  const protocol = protocolOf(nc);
  if (!protocol) return null;
  let scheduled = false;
  const write = hopTraceOn
    ? (why: string): void => {
        const bytes = protocol.outbound.size();
        if (bytes > 0) hopMark('nats.write', `${why}:${bytes}`);
        protocol.flushPending();
        if (bytes > 0) hopMark('nats.written', why);
      }
    : (): void => protocol.flushPending();
  if (hopTraceOn) traceReads(nc);
  const flush = (): void => {
    scheduled = false;
    write('pass');
  };
  protocol.sendCommand = (cmd: string | Uint8Array, ...payloads: Uint8Array[]): void => {
    protocol.outbound.fill(typeof cmd === 'string' ? encoder.encode(cmd) : cmd, ...payloads);
    if (protocol.outbound.size() >= protocol.pendingLimit) {
      write('full');
    } else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  // What is queued goes now; the pass's scheduled flush then finds nothing, or what came after.
  return () => write('now');
}

/** Hop trace: a mark for each chunk nats.js reads from its socket (a listener beside its own). */
function traceReads(nc: NatsConnection): void {
  let seen: unknown = null;
  const hook = (): void => {
    const socket = (nc as unknown as { protocol?: { transport?: { socket?: { on?: unknown } } } }).protocol?.transport
      ?.socket as { on(ev: 'data', fn: (b: Uint8Array) => void): void } | undefined;
    if (!socket || socket === seen || typeof socket.on !== 'function') return;
    seen = socket;
    socket.on('data', (b) => hopMark('nats.read', b.length));
  };
  hook();
  // a reconnect makes a new socket
  const t = setInterval(hook, 1000);
  t.unref();
}
