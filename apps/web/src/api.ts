import type { ClientFrame, UserDto } from '@skald/contracts';

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

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

async function call<T>(method: string, path: string, token: string | null, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (res.status === 204) return undefined as T;
  const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string; field?: string } };
  if (!res.ok) {
    const e = data.error ?? { code: 'error', message: res.statusText };
    if (res.status === 401) forget();
    throw new ApiError(res.status, e.code, e.message, e.field);
  }
  return data as T;
}

/** What a screen shows for a failed request: the server's message, and the field it names. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.field ? `${e.message} (${e.field})` : e.message;
  return e instanceof Error ? e.message : String(e);
}

export async function login(email: string, password: string): Promise<Auth> {
  const r = await call<{ token: string; user: UserDto }>('POST', '/api/auth/login', null, { email, password });
  localStorage.setItem(TOKEN_KEY, r.token);
  localStorage.setItem(USER_KEY, JSON.stringify(r.user));
  return { token: r.token, user: r.user };
}

/** REST with the caller's token. */
export class Api {
  constructor(readonly auth: Auth) {}
  get<T>(path: string): Promise<T> {
    return call<T>('GET', path, this.auth.token);
  }
  post<T>(path: string, body?: unknown): Promise<T> {
    return call<T>('POST', path, this.auth.token, body ?? {});
  }
  put<T>(path: string, body: unknown): Promise<T> {
    return call<T>('PUT', path, this.auth.token, body);
  }
  patch<T>(path: string, body: unknown): Promise<T> {
    return call<T>('PATCH', path, this.auth.token, body);
  }
  delete(path: string): Promise<void> {
    return call<void>('DELETE', path, this.auth.token);
  }
  /** A single-use ticket: long-lived tokens never travel in a URL. */
  async wsTicket(): Promise<string> {
    return (await this.post<{ ticket: string }>('/api/auth/ws-ticket')).ticket;
  }
}

export type Outgoing = ClientFrame;
