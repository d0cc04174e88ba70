import type { ClientFrame, UserDto } from '@skald/contracts';
import { SkaldApiError, SkaldClient, type HttpMethod } from '@skald/client';

const TOKEN_KEY = 'skald.token';
const USER_KEY = 'skald.user';

export interface Auth {
  token: string;
  user: UserDto;
}

/** The login survives a reload (the stop button and the chat must come back as they were). */
export function savedAuth(): Auth | null {
  const token = localStorage.getItem(TOKEN_KEY);
  const user = localStorage.getItem(USER_KEY);
  if (!token || !user) return null;
  try {
    return { token, user: JSON.parse(user) as UserDto };
  } catch {
    return null;
  }
}

export function forget(): void {
  localStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(USER_KEY);
}

/** A refused request: the SDK's error (status, code, message, field). */
export { SkaldApiError as ApiError };

/** What a screen shows for a failed request: the server's message, and the field it names. */
export function errorText(e: unknown): string {
  if (e instanceof SkaldApiError) return e.field ? `${e.message} (${e.field})` : e.message;
  return e instanceof Error ? e.message : String(e);
}

/** The SDK client of the page's own gateway (same origin; the socket on the page's host). */
function pageClient(token: string | null): SkaldClient {
  return new SkaldClient({
    baseUrl: '',
    token,
    wsUrl: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`,
    onUnauthorized: forget,
  });
}

export async function login(email: string, password: string): Promise<Auth> {
  const { token, user } = await SkaldClient.login({ baseUrl: '', onUnauthorized: forget, email, password });
  localStorage.setItem(TOKEN_KEY, token);
  localStorage.setItem(USER_KEY, JSON.stringify(user));
  return { token, user };
}

/** REST with the caller's token, through the SDK's request core (`path` is the full path with its query). */
export class Api {
  readonly client: SkaldClient;
  constructor(readonly auth: Auth) {
    this.client = pageClient(auth.token);
  }
  private call<T>(method: HttpMethod, path: string, body?: unknown): Promise<T> {
    return this.client.request<T>({ method, path }, body !== undefined ? { body } : {});
  }
  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }
  post<T>(path: string, body?: unknown): Promise<T> {
    return this.call<T>('POST', path, body ?? {});
  }
  put<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PUT', path, body);
  }
  patch<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PATCH', path, body);
  }
  delete(path: string): Promise<void> {
    return this.call<void>('DELETE', path);
  }
}

export type Outgoing = ClientFrame;
