import {
  context,
  type Context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import {
  connect,
  createInbox,
  ErrorCode,
  Events,
  headers as natsHeaders,
  Msg,
  MsgHdrs,
  NatsConnection,
  NatsError,
  Subscription,
} from 'nats';
import { z } from 'zod';
import {
  describeZodError,
  type DirectSubject,
  directSubject,
  ErrorBody,
  type FixedTopicKey,
  ParsedRequestOf,
  type ParsedTopicMessageOf,
  ReplyDataOf,
  ReplyOf,
  RequestOf,
  RequestSubject,
  SUBJECTS,
  type TopicAddress,
  type TopicKey,
  type TopicMessageOf,
  TOPICS,
  topicSubject,
} from '@skald/contracts';
import { BusRequestError, RemoteError } from './bus-errors';
import { databaseInputError } from './database-input';
import { hopMark, hopTraceApp, hopTraceOn } from './hop-trace';
import { readForwarded } from './forwarded';
import { NO_RESPONDER_BACKOFF, NoResponderRetry, retryNoResponders } from './no-responder-retry';
import { MuxRequestError, ReplyMux } from './reply-mux';
import { headersOf } from './safe-headers';
import { SENT_AT_HEADER, sentAtOf } from './sent-at';
import { coalesceWrites } from './write-coalescing';

// the bus's errors live on their own (`@skald/messaging/bus-errors`); the bus's callers find them here too
export { BusRequestError, RemoteError };

export interface BusOptions {
  /** NATS servers, e.g. `nats://127.0.0.1:4222`. */
  servers: string;
  /** Connection name shown by the NATS server (service name + instance). */
  name: string;
  /** Default request timeout in ms. */
  requestTimeoutMs?: number;
  user?: string;
  pass?: string;
  /**
   * Whether `publish` and `request` parse what they send with its schema (and throw on a mismatch)
   * before the receiver parses it again. The receiver is the boundary: every subscriber parses
   * every message and drops what fails, every handler parses every request and answers
   * `invalid_input`. Default: on, except with `NODE_ENV=production` (a sender's mistake then shows
   * as the subscriber's `dropped invalid message` warning or the handler's `invalid_input` answer
   * instead of a throw at the sender).
   */
  checkOutgoing?: boolean;
  /**
   * How long, from the first attempt, a request to a queue group that finds no responder (nothing
   * was delivered: the service is restarting) is sent again, with capped exponential backoff and
   * jitter (`NO_RESPONDER_BACKOFF`), before it fails `no_responders`. Default 0: it fails at once.
   */
  noResponderRetryMs?: number;
}

export interface RequestOptions {
  timeoutMs?: number;
  /** The route of one instance (a direct request only): sent to `<subject>.<route>`, not to the queue group. */
  to?: string;
  /** Ends the retry of a request that found no responder (see `BusOptions.noResponderRetryMs`). */
  signal?: AbortSignal;
}

export type Handler<S extends RequestSubject> = (request: ParsedRequestOf<S>) => Promise<ReplyDataOf<S>>;

export interface BusLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Asked for at each use, not once at load: a tracer taken before the service registers its provider
 * (from another copy of the API package) would stay a no-op.
 */
const tracer = () => trace.getTracer('@skald/messaging');
/** W3C trace context (`traceparent`, `tracestate`) in NATS headers. */
const headerSetter: TextMapSetter<MsgHdrs> = { set: (h, k, v) => h.set(k, v) };
const headerGetter: TextMapGetter<MsgHdrs> = {
  get: (h, k) => h.get(k) || undefined,
  keys: (h) => h.keys(),
};

/** The publisher's trace context of a message (the root one when it has none or its headers do not decode). */
function traceParentOf(msg: Msg): Context {
  const h = headersOf(msg);
  return h ? propagation.extract(ROOT_CONTEXT, h, headerGetter) : ROOT_CONTEXT;
}

/** The two moments of a gap in the connection to NATS (see `Bus.onConnectionGap`). */
export type ConnectionGapEdge = 'lost' | 'back';

/** What a subscriber learns about a published message besides its body. */
export interface MessageMeta {
  /** When the publisher sent it (ms since the epoch, the publisher's clock), or null when unknown. */
  sentAt: number | null;
}

/**
 * The bus over NATS (services take it as `Bus`, bus-port.ts). Typed request / publish / subscribe over NATS. Every subject and payload comes from
 * `@skald/contracts`; every inbound message is parsed with its schema before a handler sees it.
 * Core NATS is at-most-once: nothing sent through here may be the only copy of a state change.
 */
export class NatsBus {
  /** The live subscriptions, unsubscribed at drain; one that ended is forgotten (see `keep`). */
  private readonly subs = new Set<Subscription>();
  /** The subscriptions that answer requests (`handle`), drained first at shutdown (`stopAnswering`). */
  private readonly answering = new Set<Subscription>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Every request's reply comes to one inbox subscription (see ReplyMux). */
  private readonly replies: ReplyMux;
  /** Told when the connection is lost and when it is back (see `onConnectionGap`). */
  private readonly gapListeners = new Set<(edge: ConnectionGapEdge) => void>();
  /** Writes the commands queued so far at once (see `coalesceWrites`); nothing to do when not coalesced. */
  private flushNow: () => void = () => undefined;

  private constructor(
    readonly nc: NatsConnection,
    private readonly requestTimeoutMs: number,
    private readonly log: BusLogger,
    inboxPrefix: string | undefined,
    private readonly checkOutgoing: boolean,
    private readonly noResponderRetry: NoResponderRetry,
  ) {
    this.replies = new ReplyMux(nc, createInbox(inboxPrefix));
  }

  static async connect(options: BusOptions, log: BusLogger): Promise<NatsBus> {
    // A service's NATS user may subscribe only to its own inbox (`_INBOX.<user>.>`, contracts/access.ts).
    const inboxPrefix = options.user ? `_INBOX.${options.user}` : undefined;
    if (hopTraceOn) hopTraceApp(options.name.replace(/\s+/g, '_'));
    const nc = await connect({
      servers: options.servers,
      name: options.name,
      user: options.user,
      pass: options.pass,
      inboxPrefix,
      // nats.js would capture a stack (new Error()) for every request and timer, in case it fails;
      // Bus turns failures into its own errors, and those captures were the client's largest cost.
      noAsyncTraces: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 3000,
    });
    const flushNow = coalesceWrites(nc);
    if (!flushNow) log.warn({}, 'NATS client internals changed: writes not coalesced (one write per microtask)');
    const bus = new NatsBus(
      nc,
      options.requestTimeoutMs ?? 10_000,
      log,
      inboxPrefix,
      options.checkOutgoing ?? process.env.NODE_ENV !== 'production',
      { ...NO_RESPONDER_BACKOFF, boundMs: options.noResponderRetryMs ?? 0 },
    );
    if (flushNow) bus.flushNow = flushNow;
    void bus.watchStatus();
    return bus;
  }

  /**
   * Calls `listener` when the connection to NATS is lost and again when it is back. Core NATS
   * delivers nothing that was published in between, so whatever a broadcast keeps fresh (a cache
   * dropped on a doorbell) must forget it at both moments: at the loss, so that nothing read while
   * deaf is kept past the gap, and at the return. `edge` says which: `lost` or `back` (requests
   * made at `back` reach the other services again; this client's subscriptions are already
   * renewed, so a read made then misses nothing that is published after it). Returns the function
   * that removes the listener.
   */
  onConnectionGap(listener: (edge: ConnectionGapEdge) => void): () => void {
    this.gapListeners.add(listener);
    return () => void this.gapListeners.delete(listener);
  }

  /**
   * The connection's status: a loss or a return tells the gap listeners; a subject outside the
   * user's permissions is refused by the server asynchronously (a publish simply vanishes): say so
   * at error level, naming the operation and subject, so a missing grant shows up in the logs rather
   * than as a silent gap.
   */
  private async watchStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === Events.Disconnect || s.type === Events.Reconnect) {
        this.log.warn({ event: s.type }, s.type === Events.Disconnect ? 'NATS connection lost' : 'NATS reconnected');
        this.replies.setConnected(s.type === Events.Reconnect);
        const edge: ConnectionGapEdge = s.type === Events.Reconnect ? 'back' : 'lost';
        for (const listener of [...this.gapListeners]) {
          try {
            listener(edge);
          } catch (e) {
            this.log.error({ err: String(e) }, 'connection gap listener failed');
          }
        }
        continue;
      }
      if (s.type !== Events.Error || !s.permissionContext) continue;
      const { operation, subject } = s.permissionContext;
      this.log.error({ operation, subject }, 'NATS permissions violation');
      // A request to a subject this user may not publish to ends now, saying why (not at its timeout).
      if (operation === 'publish')
        this.replies.refusePublish(subject, `Permissions Violation for Publish to "${subject}"`);
    }
  }

  get connected(): boolean {
    return !this.nc.isClosed() && !this.nc.isDraining();
  }

  /** Sends a typed request and returns the parsed reply envelope. */
  async request<S extends RequestSubject>(
    subject: S,
    payload: RequestOf<S>,
    opts: RequestOptions = {},
  ): Promise<ReplyOf<S>> {
    const spec = SUBJECTS[subject];
    // `to`: one instance's own subject of a direct request (`session.submit.<route>`), not the queue group.
    const wire = opts.to === undefined ? subject : directSubject(subject as DirectSubject, opts.to);
    // The receiver is the boundary: it parses every request (and answers `invalid_input`). The
    // sender parses what it sends again only with `checkOutgoing`, as `publish` does; unchecked, the
    // payload (the schema's input type) goes as JSON encodes it and the receiver's parse applies the
    // defaults and strips unknown keys, as it would have after the sender's.
    const body = this.checkOutgoing ? spec.request.parse(payload) : payload;
    const span = tracer().startSpan(`${subject} request`, {
      kind: SpanKind.CLIENT,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
    });
    // Headers only when there is a trace context to carry: without them a request is a plain MSG,
    // smaller and cheaper for both ends to encode and parse.
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), carrier);
    let raw: Uint8Array;
    const data = encode(body);
    const send = (): Promise<Uint8Array> =>
      this.replies.request(wire, data, opts.timeoutMs ?? this.requestTimeoutMs, toHeaders(carrier));
    try {
      // A direct request names one instance: when it is gone, waiting for it is pointless.
      raw =
        opts.to === undefined && this.noResponderRetry.boundMs > 0
          ? await retryNoResponders(send, isNoResponders, this.noResponderRetry, {
              signal: opts.signal,
              onRetry: (attempts) => span.setAttribute('messaging.no_responder_retries', attempts),
            })
          : await send();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
      span.end();
      const retried = opts.to === undefined && this.noResponderRetry.boundMs > 0 && !opts.signal?.aborted;
      throw toBusError(subject, err, retried ? ` (tried again for ${this.noResponderRetry.boundMs / 1000} s)` : '');
    }
    span.end();
    const parsed = spec.reply.safeParse(safeDecode(raw));
    hopMark('bus.replied', subject);
    if (!parsed.success) {
      throw new BusRequestError(
        'bad_reply',
        subject,
        `bad reply on ${subject}: ${describeZodError(parsed.error).message}`,
      );
    }
    return parsed.data as ReplyOf<S>;
  }

  /** Sends a request and unwraps the envelope: the data, or a thrown RemoteError. */
  async call<S extends RequestSubject>(
    subject: S,
    payload: RequestOf<S>,
    opts: RequestOptions = {},
  ): Promise<ReplyDataOf<S>> {
    const reply = await this.request(subject, payload, opts);
    if (reply.ok) return reply.data;
    throw new RemoteError(reply.error);
  }

  /**
   * Answers requests on a subject in its queue group (one instance gets each request). A payload
   * that fails its schema is answered with `invalid_input`; a handler error with its code.
   * `replyNow`: the answer is written at once, with whatever the handler queued before it (the
   * session worker's submit: the message's echo), instead of at the end of this pass of the event
   * loop — for an answer someone waits on, ahead of the work the handler started.
   * `route`: this instance also answers the (direct) request alone on `<subject>.<route>`.
   */
  handle<S extends RequestSubject>(
    subject: S,
    handler: Handler<S>,
    opts: { replyNow?: boolean; route?: string } = {},
  ): void {
    const spec = SUBJECTS[subject];
    const subscribe = (wire: string, queue: string | undefined): void => {
      const sub = this.nc.subscribe(wire, { queue, callback: (err, msg) => answer(err, msg) });
      this.keep(sub);
      this.answering.add(sub);
      const forget = (): void => void this.answering.delete(sub);
      sub.closed.then(forget, forget);
    };
    const answer = (err: NatsError | null, msg: Msg): void => {
      if (err) {
        this.log.error({ subject, err: err.message }, 'subscription error');
        return;
      }
      hopMark('bus.handle', subject);
      const parent = traceParentOf(msg);
      const span = tracer().startSpan(
        `${subject} handle`,
        { kind: SpanKind.SERVER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject } },
        parent,
      );
      const work = context.with(trace.setSpan(parent, span), async () => {
        let reply: unknown;
        const parsed = spec.request.safeParse(safeDecode(msg.data));
        hopMark('bus.handle.parsed', subject);
        if (!parsed.success) {
          const { field, message } = describeZodError(parsed.error);
          reply = { ok: false, error: { code: 'invalid_input', message, field } };
        } else {
          try {
            reply = { ok: true, data: await handler(parsed.data as ParsedRequestOf<S>) };
          } catch (e) {
            reply = { ok: false, error: toErrorBody(e) };
            if (databaseInputError(e)) {
              // the client's value, refused by Postgres: a contract let it through (a StoredText missing)
              this.log.warn({ subject, err: String(e) }, 'input the database refused');
            } else if (!(e instanceof RemoteError)) {
              const { traceId } = span.spanContext();
              this.log.error(
                { subject, err: String(e), ...(isSpanContextValid(span.spanContext()) ? { traceId } : {}) },
                'handler failed',
              );
              span.setStatus({ code: SpanStatusCode.ERROR, message: String(e) });
            }
          }
        }
        hopMark('bus.respond', subject);
        if (msg.reply) {
          msg.respond(encode(reply));
          if (opts.replyNow) this.flushNow();
        }
        span.end();
      });
      this.track(work);
    };
    subscribe(subject, spec.queue);
    if (opts.route !== undefined) subscribe(directSubject(subject as DirectSubject, opts.route), undefined);
  }

  /**
   * Publishes a message of a topic (`TOPICS` in `@skald/contracts`), stamped with the time it was
   * sent (for latency metrics): `publish('userRevoked', m)` for a topic of one subject,
   * `publish(topicOf('sessionWake', sessionId), m)` for one subject of a templated topic.
   * Parsed here only with `checkOutgoing` (tests, development): the subscriber parses it in any
   * case and drops what does not match. Unchecked, the message goes as JSON encodes it, the
   * encoding its stored copy has (NaN and ±Infinity become null, undefined keys are left out).
   * It leaves with the other commands of this pass of the event loop (one socket write at its
   * end); `now`: it and whatever was queued before it are written at once, ahead of the work that
   * follows in this pass — for a message a user waits on (a message's echo).
   */
  publish<K extends FixedTopicKey>(to: K, message: TopicMessageOf<K>, opts?: { now?: boolean }): void;
  publish<K extends TopicKey>(to: TopicAddress<K>, message: TopicMessageOf<K>, opts?: { now?: boolean }): void;
  publish<K extends TopicKey>(to: K | TopicAddress<K>, message: TopicMessageOf<K>, opts: { now?: boolean } = {}): void {
    const key = typeof to === 'string' ? to : to.topic;
    this.publishUnkeyed<unknown>(topicSubject(to), TOPICS[key].message as z.ZodType<unknown>, message, opts);
  }

  /**
   * Subscribes to a topic: its every subject by its key (`subscribe('sessionWake', …)`), or the
   * subjects an address names (`topicOf('userEvents', userId)`). Each message is parsed with the
   * topic's schema; invalid ones are dropped with a warning. `queue`: one subscriber of the group
   * gets each message.
   */
  subscribe<K extends TopicKey>(
    from: K | TopicAddress<K>,
    onMessage: (message: ParsedTopicMessageOf<K>, subject: string, meta: MessageMeta) => void | Promise<void>,
    queue?: string,
  ): Subscription {
    const key = typeof from === 'string' ? from : from.topic;
    const schema = TOPICS[key].message as z.ZodType<ParsedTopicMessageOf<K>>;
    return this.subscribeUnkeyed(topicSubject(from), schema, onMessage, queue);
  }

  /**
   * `publish` on any subject with any schema: for this library's own specs of the wire (what the
   * sender encodes, when it writes). Services publish by topic key; a unit spec
   * (test/unit/access.spec.ts) keeps this out of their code.
   */
  publishUnkeyed<T>(subject: string, schema: z.ZodType<T>, message: T, opts: { now?: boolean } = {}): void {
    const h = natsHeaders();
    h.set(SENT_AT_HEADER, String(Date.now()));
    propagation.inject(context.active(), h, headerSetter);
    if (hopTraceOn) hopMark('bus.publish', opts.now ? `${subject.split('.')[0]}:now` : subject.split('.')[0]);
    this.nc.publish(subject, encode(this.checkOutgoing ? schema.parse(message) : message), { headers: h });
    if (opts.now) this.flushNow();
  }

  /** `subscribe` on any pattern with any schema: for this library's own specs, as `publishUnkeyed`. */
  subscribeUnkeyed<T>(
    pattern: string,
    schema: z.ZodType<T>,
    onMessage: (message: T, subject: string, meta: MessageMeta) => void | Promise<void>,
    queue?: string,
  ): Subscription {
    const sub = this.nc.subscribe(pattern, {
      queue,
      callback: (err, msg) => {
        if (err) return;
        const parsed = schema.safeParse(safeDecode(msg.data));
        if (!parsed.success) {
          this.log.warn(
            { subject: msg.subject, issue: describeZodError(parsed.error).message },
            'dropped invalid message',
          );
          return;
        }
        const sentAt = sentAtOf(msg);
        const parent = traceParentOf(msg);
        const failed = (e: unknown): void =>
          this.log.error({ subject: msg.subject, err: String(e) }, 'message handler failed');
        // A handler that throws, at once or later, is logged; it never reaches the NATS client's read loop.
        let r: void | Promise<void>;
        try {
          // the publisher's trace continues in what this message starts (a wake drives a turn)
          r = context.with(parent, () => onMessage(parsed.data, msg.subject, { sentAt }));
        } catch (e) {
          failed(e);
          return;
        }
        if (r instanceof Promise) this.track(r.catch(failed));
      },
    });
    this.keep(sub);
    return sub;
  }

  /**
   * Subscribes to messages that are handed on as they were published (session events on their way to
   * the sockets): the handler gets the publisher's JSON text and the envelope `readEnvelope` read from
   * the parsed value — no schema parse, no copy re-serialised. A message over 1 MiB, not UTF-8, not
   * JSON, carrying a prototype key, or without an envelope (null) is dropped with a warning and never
   * reaches the handler (see `readForwarded`). The handler is synchronous and starts no trace (the
   * publisher's context is not read); a handler that throws is logged.
   */
  subscribeForwarded<E>(
    from: TopicKey | TopicAddress<TopicKey>,
    readEnvelope: (value: unknown) => E | null,
    onMessage: (text: string, envelope: E, subject: string, meta: MessageMeta) => void,
  ): Subscription {
    const sub = this.nc.subscribe(topicSubject(from), {
      callback: (err, msg) => {
        if (err) return;
        if (hopTraceOn) hopMark('bus.forwarded', msg.subject.split('.')[0]);
        try {
          const read = readForwarded(msg.data, readEnvelope);
          if (!read.ok) {
            this.log.warn({ subject: msg.subject, issue: read.problem }, 'dropped invalid message');
            return;
          }
          onMessage(read.text, read.envelope, msg.subject, { sentAt: sentAtOf(msg) });
        } catch (e) {
          this.log.error({ subject: msg.subject, err: String(e) }, 'message handler failed');
        }
      },
    });
    this.keep(sub);
    return sub;
  }

  /**
   * Shutdown, first step: stops answering requests (`handle`) without losing one already on its
   * way. Each request subscription is drained: the server stops routing to it (a request now goes
   * to another replica, or finds no responder and its sender retries), and what was delivered
   * before that is still handled. Broadcast subscriptions stay (a running tool call's cancel).
   * Resolves when the server has confirmed it, or after `boundMs`; the handlers still running are
   * waited for by `drain` (or their owner).
   */
  async stopAnswering(boundMs = 2_000): Promise<void> {
    // (a closed connection's drain throws at once: settled like a rejection)
    const drained = Promise.allSettled([...this.answering].map(async (s) => s.drain()));
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => (timer = setTimeout(r, boundMs)));
    await Promise.race([drained, bound]);
    clearTimeout(timer);
  }

  /** Waits until the handlers running now (and any they lead to) have ended, or `boundMs` has passed. */
  async settled(boundMs: number): Promise<void> {
    const until = Date.now() + boundMs;
    while (this.inflight.size > 0 && Date.now() < until) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, until - Date.now()))));
      await Promise.race([Promise.allSettled([...this.inflight]), bound]);
      clearTimeout(timer);
    }
  }

  /** Stops taking messages, waits for handlers in flight, then closes the connection. */
  async drain(): Promise<void> {
    await this.stopAnswering();
    for (const s of [...this.subs]) s.unsubscribe();
    await Promise.allSettled([...this.inflight]);
    if (!this.nc.isClosed()) await this.nc.drain().catch(() => undefined);
  }

  /**
   * Keeps a subscription for `drain` until it closes: per-call and per-socket subscriptions (a
   * watched tool call, a user's events) would otherwise pile up for the life of the process.
   */
  private keep(sub: Subscription): void {
    this.subs.add(sub);
    const forget = (): void => void this.subs.delete(sub);
    sub.closed.then(forget, forget);
  }

  /** Keeps a handler's promise for `drain`; its rejection (if any) is settled here, never unhandled. */
  private track(p: Promise<unknown>): void {
    this.inflight.add(p);
    const done = (): void => void this.inflight.delete(p);
    p.then(done, (e: unknown) => {
      done();
      this.log.error({ err: String(e) }, 'handler failed');
    });
  }
}

function isNoResponders(err: unknown): boolean {
  return err instanceof MuxRequestError && err.code === 'no_responders';
}

function toHeaders(carrier: Record<string, string>): MsgHdrs | undefined {
  const keys = Object.keys(carrier);
  if (keys.length === 0) return undefined;
  const h = natsHeaders();
  for (const k of keys) h.set(k, carrier[k]);
  return h;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
function encode(v: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(v));
}
function decode(b: Uint8Array): unknown {
  return JSON.parse(decoder.decode(b));
}
function safeDecode(b: Uint8Array): unknown {
  try {
    return decode(b);
  } catch {
    return undefined;
  }
}

/** `retried`: what the "no responders" message adds when the request was tried again until its bound. */
function toBusError(subject: string, err: unknown, retried = ''): BusRequestError {
  if (err instanceof MuxRequestError) {
    if (err.code === 'no_responders')
      return new BusRequestError('no_responders', subject, `no service answers ${subject}${retried}`);
    if (err.code === 'timeout') return new BusRequestError('timeout', subject, err.message);
  }
  if (err instanceof NatsError) {
    if (err.code === String(ErrorCode.NoResponders))
      return new BusRequestError('no_responders', subject, `no service answers ${subject}`);
    if (err.code === String(ErrorCode.Timeout)) return new BusRequestError('timeout', subject, `${subject} timed out`);
  }
  return new BusRequestError(
    'disconnected',
    subject,
    `${subject} failed: ${err instanceof Error ? err.message : String(err)}`,
  );
}

/**
 * The error envelope a handler's failure is answered with: a RemoteError's body as it is, a coded
 * error by its code, a database error the request's value caused (Postgres class 22: text it cannot
 * hold, a value too long or out of range) as `invalid_input`, anything else `internal`.
 */
export function toErrorBody(e: unknown): ErrorBody {
  if (e instanceof RemoteError) return e.body;
  const refused = databaseInputError(e);
  if (refused) return refused;
  const coded = e as { code?: unknown; message?: unknown; field?: unknown };
  if (coded && typeof coded.code === 'string' && ErrorBody.shape.code.safeParse(coded.code).success) {
    return {
      code: coded.code as ErrorBody['code'],
      message: typeof coded.message === 'string' ? coded.message : coded.code,
      field: typeof coded.field === 'string' ? coded.field : undefined,
    };
  }
  return { code: 'internal', message: 'internal error' };
}
