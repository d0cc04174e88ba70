import type {
  OperationId,
  Attachment,
  ChatMessages,
  CreateSessionResponse,
  InboxDto,
  PostMessageRequest,
  PostMessageResponse,
  SessionApprovalScope,
  ServerFrame,
  SessionList,
  UserDto,
} from '@skald/contracts';
import { ROUTE_TABLE } from '@skald/contracts/route-table';
import {
  ChatConnection,
  type ConnectionState,
  type HeartbeatOptions,
  type AckOptions,
  type ReconnectOptions,
  type SocketCredential,
} from './connection.ts';
import {
  callOperation,
  fetchOperation,
  operationPages,
  type CallArgs,
  type CallParts,
  type CallResult,
  type PagedOperationId,
  type PageItem,
  type PagesOptions,
} from './operations.ts';
import { RestCore, type FetchLike, type RequestParts, type RouteRef } from './rest.ts';
import { socketUrl, type WebSocketConstructor } from './transport.ts';

export interface SkaldClientOptions {
  /** The gateway's origin (`https://skald.example.com`); `''` in a browser page the gateway serves. */
  baseUrl: string;
  /** A login's JWT or an API token. */
  token?: string | null;
  /** The platform's `fetch` unless given (Node 18+, browsers and React Native have one). */
  fetch?: FetchLike;
  /** The platform's `WebSocket` unless given; in Node pass the `ws` package's. */
  WebSocket?: WebSocketConstructor;
  /** The WS origin when it cannot be told from `baseUrl` (a browser page: `wss://host`). */
  wsUrl?: string;
  /** Called when a REST call answers 401 (the credential ended). */
  onUnauthorized?: () => void;
}

export interface LoginResult {
  token: string;
  expires_at: string;
  user: UserDto;
}

export interface ConnectOptions {
  /** The client surface (`web`, `mobile`, `cli`, …); each (user, source) has one active session. */
  source: string;
  /**
   * How the socket authenticates: `ticket` (default; a single-use ticket from `POST
   * /api/auth/ws-ticket`, the only way a browser can) or `header` (the bearer token in the upgrade's
   * `Authorization` header, for Node and React Native).
   */
  auth?: 'ticket' | 'header';
  /**
   * Where a session not shown yet starts (see `ChatConnection`). Default: the seq the latest history
   * page covers (`GET /api/{source}/messages`), so only what comes after is replayed.
   */
  startAt?: (sessionId: string) => Promise<number | null>;
  reconnect?: ReconnectOptions;
  heartbeat?: HeartbeatOptions;
  ack?: AckOptions;
  /** Listeners registered before the connection starts, so none of its frames or states is missed. */
  onFrame?: (f: ServerFrame) => void;
  onState?: (s: ConnectionState) => void;
}

/**
 * What `resolveApproval` sends: approve or reject, with an optional note and session approval;
 * `arguments`: approve the call with these arguments instead (edit before approve: checked by the
 * tool's schema and the gate; a Deny answers 403 and the call still waits; no session approval).
 */
export interface ApprovalAnswer {
  action: 'approve' | 'reject';
  note?: string;
  bypass_secs?: number;
  bypass_scope?: SessionApprovalScope;
  arguments?: Record<string, unknown>;
  /** The surface answering, for the audit (`inbox` when absent). */
  channel?: 'inbox' | 'cli';
}

/** The routes the SDK's named helpers call (every operation is reached through `call`). */
export const ROUTES = {
  login: ROUTE_TABLE.login,
  wsTicket: ROUTE_TABLE.createWsTicket,
  messages: ROUTE_TABLE.listMessages,
  postMessage: ROUTE_TABLE.postMessage,
  cancel: ROUTE_TABLE.cancelTurn,
  upload: ROUTE_TABLE.uploadFile,
  file: ROUTE_TABLE.getFile,
  sessions: ROUTE_TABLE.listSessions,
  createSession: ROUTE_TABLE.createSession,
  inbox: ROUTE_TABLE.getInbox,
  resolveApproval: ROUTE_TABLE.resolveApproval,
  resolveClarification: ROUTE_TABLE.answerClarification,
} as const;

function platformFetch(): FetchLike {
  const f = (globalThis as { fetch?: FetchLike }).fetch;
  if (!f) throw new TypeError('this platform has no fetch: pass options.fetch');
  return (input, init) => f(input, init);
}

/**
 * The Skald client: REST calls with the caller's credential, and chat connections. Nothing in it
 * needs Node: `fetch` and `WebSocket` are the platform's or the caller's.
 */
export class SkaldClient {
  readonly rest: RestCore;
  private token: string | null;

  constructor(private readonly options: SkaldClientOptions) {
    this.token = options.token ?? null;
    this.rest = new RestCore({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      token: () => this.token,
      fetch: options.fetch ?? platformFetch(),
      onUnauthorized: options.onUnauthorized,
    });
  }

  /** Logs in with email and password: the client carries the JWT from then on. */
  static async login(
    options: Omit<SkaldClientOptions, 'token'> & { email: string; password: string },
  ): Promise<{ client: SkaldClient } & LoginResult> {
    const { email, password, ...rest } = options;
    const client = new SkaldClient(rest);
    const r = await client.rest.request<LoginResult>(ROUTES.login, { body: { email, password } });
    client.token = r.token;
    return { client, ...r };
  }

  get credential(): string | null {
    return this.token;
  }

  /** Any route: `request({method: 'GET', path: '/api/sessions/{id}'}, {params: {id}})`. */
  request<T>(r: RouteRef, parts?: RequestParts): Promise<T> {
    return this.rest.request<T>(r, parts);
  }

  /**
   * One REST operation by its operationId (the API document's), typed from its route:
   * `call('getSession', {params: {id}})`, `call('renameSession', {params: {id}, body: {title}})`.
   * A multipart operation takes a `FormData` body; a file answers a `Blob`; no body, `undefined`.
   */
  call<K extends OperationId>(op: K, ...args: CallArgs<K>): Promise<CallResult<K>> {
    return callOperation(this.rest, op, args[0]) as Promise<CallResult<K>>;
  }

  /** The raw `Response` of an operation, for reading its body as a stream (`createChatCompletion` with `stream: true`, a download). */
  raw<K extends OperationId>(op: K, ...args: CallArgs<K>): Promise<Response> {
    return fetchOperation(this.rest, op, args[0]);
  }

  /**
   * The pages of a paged operation (`listSessions`, `listMessages`, `listAudit`, `listNotifications`),
   * from the one `parts` names, each page fetched when the iteration asks; at most `maxPages` (100).
   */
  pages<K extends PagedOperationId>(op: K, parts: CallParts<K>, options?: PagesOptions): AsyncIterable<CallResult<K>> {
    const rest = this.rest;
    return {
      [Symbol.asyncIterator]: () =>
        operationPages(rest, op, parts, options) as AsyncGenerator<CallResult<K>, void, undefined>,
    };
  }

  /** The items of every page of a paged operation, in the order of the pages (bounded like `pages`). */
  async *items<K extends PagedOperationId>(
    op: K,
    parts: CallParts<K>,
    options?: PagesOptions,
  ): AsyncGenerator<PageItem<K>, void, undefined> {
    for await (const page of operationPages(this.rest, op, parts, options))
      yield* (page as { items: Array<PageItem<K>> }).items;
  }

  /** A single-use WS ticket (valid 30 s): long-lived tokens never travel in a URL. */
  async wsTicket(): Promise<string> {
    return (await this.rest.request<{ ticket: string }>(ROUTES.wsTicket, { body: {} })).ticket;
  }

  /** A page of the chat history of `source`'s active session, oldest first, with the seq it covers. */
  messages(source: string, query: { before?: string; limit?: number } = {}): Promise<ChatMessages> {
    return this.rest.request(ROUTES.messages, { params: { source }, query });
  }

  /** A message without a socket (`202`); the turn's events reach the source's sockets. */
  postMessage(source: string, body: PostMessageRequest): Promise<PostMessageResponse> {
    return this.rest.request(ROUTES.postMessage, { params: { source }, body });
  }

  /** `/stop` without a socket. */
  cancel(source: string): Promise<{ cancelled: boolean }> {
    return this.rest.request(ROUTES.cancel, { params: { source }, body: {} });
  }

  /** Uploads one file to `/workspace/uploads/`: the attachment a message carries. */
  upload(source: string, file: Blob, name?: string): Promise<Attachment> {
    const body = new FormData();
    body.append('file', file, name ?? ((file as { name?: string }).name || 'upload'));
    return this.rest.request(ROUTES.upload, { params: { source }, body });
  }

  /** A workspace file's bytes and type. */
  async file(path: string): Promise<Blob> {
    return (await this.rest.fetch(ROUTES.file, { query: { path } })).blob();
  }

  sessions(query: { source?: string; page?: number; per_page?: number; q?: string } = {}): Promise<SessionList> {
    return this.rest.request(ROUTES.sessions, { query });
  }

  /** A new active session for `source` (its sockets get `new_session`). */
  createSession(source: string): Promise<CreateSessionResponse> {
    return this.rest.request(ROUTES.createSession, { query: { source }, body: {} });
  }

  /** What waits for the caller's answer across all sessions. */
  inbox(): Promise<InboxDto> {
    return this.rest.request(ROUTES.inbox);
  }

  resolveApproval(requestId: string, answer: ApprovalAnswer): Promise<unknown> {
    return this.rest.request(ROUTES.resolveApproval, { params: { id: requestId }, body: answer });
  }

  resolveClarification(requestId: string, answer: string): Promise<unknown> {
    return this.rest.request(ROUTES.resolveClarification, { params: { id: requestId }, body: { answer } });
  }

  /** A chat connection of one source, started. */
  connect(options: ConnectOptions): ChatConnection {
    const WS = this.options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WS) throw new TypeError('this platform has no WebSocket: pass options.WebSocket (in Node: the ws package)');
    const wsBase = this.options.wsUrl ?? this.rest.baseUrl;
    const { source } = options;
    const credential = async (): Promise<SocketCredential> => {
      if (options.auth !== 'header') return { ticket: await this.wsTicket() };
      if (!this.token) throw new TypeError('no token to send: log in first');
      return { headers: { authorization: `Bearer ${this.token}` } };
    };
    const startAt =
      options.startAt ??
      (async (sessionId: string) => {
        const page = await this.messages(source, { limit: 1 });
        return page.session_id === sessionId && page.resume_seq !== undefined ? page.resume_seq : null;
      });
    const conn = new ChatConnection({
      url: (c) => socketUrl(wsBase, source, 'ticket' in c ? c.ticket : undefined),
      credential,
      WebSocket: WS,
      startAt,
      reconnect: options.reconnect,
      heartbeat: options.heartbeat,
      ack: options.ack,
    });
    if (options.onFrame) conn.onFrame(options.onFrame);
    if (options.onState) conn.onState(options.onState);
    return conn.start();
  }
}
