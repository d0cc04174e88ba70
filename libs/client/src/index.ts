export { SkaldClient, ROUTES } from './client.ts';
export type { SkaldClientOptions, ConnectOptions, LoginResult, ApprovalAnswer } from './client.ts';
export { ChatConnection } from './connection.ts';
export type {
  ChatConnectionOptions,
  ConnectionState,
  MessageOptions,
  ApproveOptions,
  ReconnectOptions,
  HeartbeatOptions,
  AckOptions,
  SocketCredential,
} from './connection.ts';
export { Turn, TURN_BUFFER_MAX } from './turn.ts';
export type { TurnEvent, TurnEnd, TurnStatus, TurnKind } from './turn.ts';
export type { CallArgs, CallParts, CallResult, PagedOperationId, PageItem, PagesOptions } from './operations.ts';
export { ROUTE_TABLE } from '@skald/contracts/route-table';
export type { RouteWire } from '@skald/contracts/route-table';
export { RestCore, fillPath, queryString } from './rest.ts';
export type { RouteRef, RequestParts, HttpMethod, FetchLike } from './rest.ts';
export { SkaldApiError, SkaldConnectionError } from './errors.ts';
export { socketUrl } from './transport.ts';
export type { WebSocketLike, WebSocketConstructor } from './transport.ts';
export type { ServerFrame, ClientFrame, OperationId } from '@skald/contracts';
