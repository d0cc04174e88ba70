import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import WebSocket, { WebSocketServer } from 'ws';
import {
  userCapReached,
  Actor,
  ApprovalChannel,
  ClientFrame,
  describeZodError,
  PROTOCOL_VERSION,
  readEphemeralEventEnvelope,
  readSessionEventEnvelope,
  Source,
  topicOf,
  ANY_ID,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { hopMark } from '@skald/messaging/hop-trace';
import { JSON_LIMITS } from '@skald/service-kit/bounded-json';
import type { Logger } from '@skald/service-kit';
import type { Subscription } from 'nats';
import { AuthService, Principal } from '../auth/auth.service';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError } from '../http/api-error';
import { SessionsGateway } from '../sessions/sessions.gateway';
import { GatewayMetrics } from './gateway-metrics';
import { SocketCap } from './socket-cap';
import { frameOf, GapRetry, WsConnection } from './ws-connection';
import { forwardable, forwardableEphemeral } from './forwarded-events';
import { frameErrorOf, parseClientFrame } from './client-frame';
import { GATEWAY_LOGGER } from '../tokens';

const SERVER_VERSION = '0.1.0';
/** Sockets whose credentials one revalidation query checks. */
const REVALIDATE_BATCH = 500;
/**
 * A socket's catch-up after a gap in the NATS connection: the session workers reconnect on their
 * own schedule (500 ms between tries), so the read is tried for about two seconds.
 */
const GAP_RETRY: GapRetry = { attempts: 10, waitMs: 200 };

/**
 * The WebSocket edge at `/api/ws?source=`. Authenticates before the upgrade (401 / 403 answered
 * on the HTTP request), turns frames into NATS requests, and fans session, ephemeral and user
 * events from NATS out to that user's sockets only.
 */
@Injectable()
export class WsServer implements OnApplicationShutdown {
  // UTF-8 is checked by parseClientFrame, so invalid bytes get an `error` event like any bad frame.
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: JSON_LIMITS.maxBytes,
    skipUTF8Validation: true,
  });
  private readonly byUser = new Map<string, Set<WsConnection>>();
  private readonly userSubs = new Map<string, Subscription[]>();
  private readonly allowedOrigins: Set<string>;
  private readonly revalidateTimer: NodeJS.Timeout;
  private revalidating = false;
  private readonly unwatchGaps: () => void;

  constructor(
    private readonly auth: AuthService,
    private readonly sessions: SessionsGateway,
    private readonly bus: Bus,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(GATEWAY_LOGGER) private readonly log: Logger,
    private readonly metrics: GatewayMetrics,
    private readonly socketCap: SocketCap,
  ) {
    const own = config.SKALD_PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`;
    this.allowedOrigins = new Set(
      (config.SKALD_ALLOWED_ORIGINS ?? own)
        .split(',')
        .map((o) => o.trim().replace(/\/$/, ''))
        .filter(Boolean),
    );
    this.bus.subscribe('userRevoked', (m) => this.recheckUser(m.user_id));
    this.unwatchGaps = this.bus.onConnectionGap((edge) => {
      if (edge === 'back') this.catchUpAll();
    });
    this.revalidateTimer = setInterval(() => void this.revalidateAll(), config.SKALD_WS_REVALIDATE_SECS * 1000);
    this.revalidateTimer.unref();
  }

  get connectionCount(): number {
    let n = 0;
    for (const set of this.byUser.values()) n += set.size;
    return n;
  }

  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Node leaves an upgrading socket without an error listener: a client that resets it while
      // it is being authenticated would raise an uncaught exception.
      socket.on('error', () => socket.destroy());
      this.upgrade(req, socket, head).catch((e: unknown) => {
        this.log.error({ err: String(e) }, 'upgrade failed');
        refuse(socket, 500, 'internal', 'internal error');
      });
    });
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://gateway');
    } catch {
      return refuse(socket, 400, 'invalid_input', 'malformed request target');
    }
    if (url.pathname !== '/api/ws') return refuse(socket, 404, 'not_found', 'no such endpoint');
    const origin = req.headers.origin;
    if (origin && !this.allowedOrigins.has(origin.replace(/\/$/, '')))
      return refuse(socket, 403, 'forbidden', 'origin not allowed');
    const source = Source.safeParse(url.searchParams.get('source') ?? 'web');
    if (!source.success)
      return refuse(socket, 400, 'invalid_input', `source: ${describeZodError(source.error).message}`);
    let principal: Principal;
    try {
      const bearer = req.headers.authorization?.match(/^Bearer\s+(\S+)$/i)?.[1];
      const ticket = url.searchParams.get('ticket');
      if (bearer) principal = await this.auth.authenticate(bearer);
      else if (ticket) principal = await this.auth.redeemWsTicket(ticket);
      else return refuse(socket, 401, 'unauthorized', 'missing credentials: Authorization header or ?ticket=');
    } catch (e) {
      if (e instanceof ApiError) return refuse(socket, e.status, e.code, e.message);
      return refuse(socket, 503, 'unavailable', 'authentication unavailable');
    }
    // The per-user cap on sockets: a place is taken before the upgrade; at the cap the socket opens
    // only to be told (an `error` frame naming the cap, which a browser can read) and closed.
    const place = await this.socketCap.take(principal.actor.userId);
    if (!place.taken) {
      const body = userCapReached('sockets', this.socketCap.cap, place.have);
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        ws.send(frameOf({ type: 'error', ...body }));
        ws.close(1008, 'per-user limit sockets reached');
      });
      return;
    }
    // The connection's end frees the place, also when the client leaves before the upgrade completes
    // (then the upgrade's callback never runs).
    if (socket.destroyed) return place.release();
    socket.once('close', place.release);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const replay = (sessionId: string, afterSeq: number | undefined) =>
        this.sessions.replay(principal.actor, sessionId, afterSeq);
      this.open(new WsConnection(ws, principal, source.data, replay)).catch((e: unknown) => {
        this.log.error({ userId: principal.actor.userId, err: String(e) }, 'socket setup failed');
        ws.close(1011, 'session service unavailable; retry');
      });
    });
  }

  private async open(conn: WsConnection): Promise<void> {
    const { ws } = conn;
    this.register(conn);
    conn.armExpiry();
    ws.on('message', (data) => void this.onFrame(conn, data));
    ws.on('close', () => this.unregister(conn));
    ws.on('error', () => this.unregister(conn));
    try {
      const sessionId = await this.sessions.activeSession(conn.principal.actor, conn.source);
      await conn.resume(sessionId, undefined, () =>
        conn.send({ type: 'hello', protocol: PROTOCOL_VERSION, server_version: SERVER_VERSION, session_id: sessionId }),
      );
    } catch (e) {
      this.log.warn({ userId: conn.userId, err: String(e) }, 'socket setup failed');
      ws.close(1011, 'session service unavailable; retry');
    }
  }

  /**
   * The one error boundary of a frame: whatever the bytes and whatever the handler does, the client
   * gets an `error` event (or a PROTOCOL.md close code) and the process goes on. Never rejects.
   */
  private async onFrame(conn: WsConnection, data: WebSocket.RawData): Promise<void> {
    let requestId: string | undefined;
    let clientMessageId: string | undefined;
    hopMark('ws.frame');
    try {
      if (!conn.countFrame()) {
        conn.ws.close(1008, 'too many frames');
        return;
      }
      const parsed = parseClientFrame(data);
      if (!parsed.ok) {
        conn.send({ type: 'error', ...parsed.error });
        return;
      }
      requestId = 'request_id' in parsed.frame ? parsed.frame.request_id : undefined;
      // the frame was validated: its id is one (no second parse on the path of every message)
      const f = parsed.frame;
      clientMessageId =
        f.type === 'message' || f.type === 'regenerate' || f.type === 'edit' ? f.client_message_id : undefined;
      hopMark('ws.parsed', parsed.frame.type);
      await this.dispatch(conn, parsed.frame);
    } catch (e) {
      const { error, unexpected } = frameErrorOf(e);
      if (unexpected) this.log.error({ userId: conn.userId, err: String(e) }, 'frame failed');
      try {
        conn.send({
          type: 'error',
          ...error,
          ...(requestId ? { request_id: requestId } : {}),
          ...(clientMessageId ? { client_message_id: clientMessageId } : {}),
        });
      } catch (sendFailed) {
        this.log.warn({ userId: conn.userId, err: String(sendFailed) }, 'could not answer a failed frame');
      }
    }
  }

  private async dispatch(conn: WsConnection, frame: ClientFrame): Promise<void> {
    const actor: Actor = conn.principal.actor;
    switch (frame.type) {
      case 'message': {
        // The echo may come with the submit's answer: it follows the ack.
        await conn.holdingLive(async () => {
          const r = await this.sessions.submit(actor, conn.source, frame);
          if ('command_result' in r) {
            if (r.session_id && r.session_id !== conn.sessionId) this.switchSession(conn, r.session_id);
            conn.send({ type: 'command_result', ...r.command_result });
            return;
          }
          conn.send({
            type: 'ack',
            client_message_id: r.client_message_id,
            message_id: r.message_id,
            duplicate: r.duplicate,
          });
        });
        return;
      }
      case 'cancel':
        if (conn.sessionId) await this.sessions.cancel(actor, conn.sessionId);
        return;
      case 'resume': {
        const sessionId = frame.session_id ?? (await this.sessions.activeSession(actor, conn.source));
        await conn.resume(sessionId, frame.last_seq);
        return;
      }
      case 'approve_tool':
        await this.bus.call('approval.resolve', {
          actor,
          request_id: frame.request_id,
          action: 'approve',
          bypass_secs: frame.bypass_secs,
          bypass_scope: frame.bypass_scope,
          arguments: frame.arguments,
          channel: cardChannel(conn.source),
        });
        return;
      case 'reject_tool':
        await this.bus.call('approval.resolve', {
          actor,
          request_id: frame.request_id,
          action: 'reject',
          note: frame.note,
          channel: cardChannel(conn.source),
        });
        return;
      case 'answer_question':
        await this.bus.call('approval.resolve', {
          actor,
          request_id: frame.request_id,
          action: 'answer',
          answer: frame.answer,
        });
        return;
      case 'select_client': {
        const r = await this.bus.call('llm.pin', { actor, source: conn.source, client: frame.client });
        conn.send({ type: 'client_selected', client: r.client });
        return;
      }
      case 'regenerate':
      case 'edit': {
        const r = await this.sessions.rewind(actor, conn.source, frame);
        conn.send({
          type: 'ack',
          client_message_id: r.client_message_id,
          message_id: r.message_id,
          duplicate: r.duplicate,
        });
        return;
      }
      case 'ping':
        conn.send({ type: 'pong' });
        return;
      default: {
        const never: never = frame;
        throw new ApiError('invalid_input', `unknown frame ${JSON.stringify(never)}`);
      }
    }
  }

  private switchSession(conn: WsConnection, sessionId: string): void {
    conn.switchTo(sessionId).catch((e: unknown) => {
      this.log.warn({ userId: conn.userId, err: String(e) }, 'could not read the new session; closing the socket');
      conn.ws.close(1011, 'session service unavailable; retry');
    });
  }

  private register(conn: WsConnection): void {
    let set = this.byUser.get(conn.userId);
    if (!set) {
      set = new Set();
      this.byUser.set(conn.userId, set);
      this.subscribeUser(conn.userId);
    }
    set.add(conn);
    this.metrics.wsConnections.inc();
  }

  private unregister(conn: WsConnection): void {
    conn.dispose();
    const set = this.byUser.get(conn.userId);
    if (!set?.delete(conn)) return;
    this.metrics.wsConnections.dec();
    if (set.size > 0) return;
    this.byUser.delete(conn.userId);
    for (const s of this.userSubs.get(conn.userId) ?? []) s.unsubscribe();
    this.userSubs.delete(conn.userId);
  }

  /** One set of NATS subscriptions per user with sockets on this replica: that user's events only. */
  private subscribeUser(userId: string): void {
    const conns = (): Set<WsConnection> => this.byUser.get(userId) ?? new Set();
    this.userSubs.set(userId, [
      this.bus.subscribeForwarded(
        topicOf('sessionEvents', userId, ANY_ID),
        readSessionEventEnvelope,
        (text, envelope, subject, meta) => {
          const event = forwardable(userId, subject, envelope, text);
          if (!event) {
            this.log.warn(
              { userId, subject, sessionId: envelope.session_id },
              'dropped a session event sent on another subject',
            );
            return;
          }
          for (const c of conns()) c.deliverLive(event);
          this.metrics.fannedOut('session', meta.sentAt);
        },
      ),
      this.bus.subscribeForwarded(
        topicOf('ephemeralEvents', userId, ANY_ID),
        readEphemeralEventEnvelope,
        (text, envelope, subject, meta) => {
          const event = forwardableEphemeral(userId, subject, envelope, text);
          if (!event) {
            this.log.warn(
              { userId, subject, sessionId: envelope.session_id },
              'dropped an ephemeral event sent on another subject',
            );
            return;
          }
          for (const c of conns()) if (c.sessionId === event.session_id) c.send(event);
          this.metrics.fannedOut('ephemeral', meta.sentAt);
        },
      ),
      this.bus.subscribe(topicOf('userEvents', userId), (e, _s, meta) => {
        this.metrics.fannedOut('user', meta.sentAt);
        for (const c of conns()) {
          if (e.type === 'new_session') {
            if (c.source === e.source && c.sessionId !== e.session_id) this.switchSession(c, e.session_id);
          } else if (e.type === 'task_update' || e.type === 'notification') {
            if (c.source === e.source) c.send(e);
          } else c.send(e);
        }
      }),
    ]);
  }

  /**
   * Session events published while the NATS connection was down never arrive, and a turn's last
   * one has no later event to reveal the loss: once the connection is back every socket reads what
   * it missed from the events table (then `turn_running`), or is closed (1011) to resume. User
   * events lost in the gap are not replayed; their REST routes are the truth.
   */
  private catchUpAll(): void {
    const all = [...this.byUser.values()].flatMap((set) => [...set]);
    this.log.warn({ sockets: all.length }, 'NATS connection back: catching sockets up from the events table');
    for (const conn of all)
      conn.catchUpAfterGap(GAP_RETRY).catch((e: unknown) => {
        this.log.warn({ userId: conn.userId, err: String(e) }, 'catch-up after a NATS gap failed');
      });
  }

  private async recheckUser(userId: string): Promise<void> {
    await this.revalidate([...(this.byUser.get(userId) ?? [])]);
  }

  /**
   * Every socket of this replica re-checks its credential against the database: a revocation
   * whose broadcast was lost still ends its sockets within one interval. Batched, one run at a time.
   */
  private async revalidateAll(): Promise<void> {
    if (this.revalidating) return;
    this.revalidating = true;
    try {
      const all = [...this.byUser.values()].flatMap((set) => [...set]);
      for (let i = 0; i < all.length; i += REVALIDATE_BATCH) await this.revalidate(all.slice(i, i + REVALIDATE_BATCH));
    } catch (e) {
      this.log.warn({ err: String(e) }, 'socket revalidation failed; retrying at the next interval');
    } finally {
      this.revalidating = false;
    }
  }

  /** Closes (4401) the sockets whose credential expired or was revoked. */
  private async revalidate(conns: WsConnection[]): Promise<void> {
    if (conns.length === 0) return;
    const valid = await this.auth.stillValid(conns.map((c) => c.principal));
    conns.forEach((c, i) => {
      if (!valid[i]) c.ws.close(4401, 'credentials changed');
    });
  }

  onApplicationShutdown(): void {
    clearInterval(this.revalidateTimer);
    this.unwatchGaps();
    for (const set of this.byUser.values()) for (const c of set) c.ws.close(1001, 'server shutting down');
    this.wss.close();
  }
}

function refuse(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason =
    {
      400: 'Bad Request',
      401: 'Unauthorized',
      403: 'Forbidden',
      404: 'Not Found',
      500: 'Internal Server Error',
      503: 'Service Unavailable',
    }[status] ?? 'Error';
  socket.write(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.destroy();
}

/** An answer over the socket comes from a chat's card: the CLI's chat, or any other client's. */
function cardChannel(source: string): ApprovalChannel {
  return source === 'cli' ? 'cli' : 'card';
}
