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
  localStorage.removeItem(SSO_KEY);
}

const SSO_KEY = 'skald.sso';

/** How the login page lets people in. */
export interface LoginOptions {
  password_login: boolean;
  providers: Array<{ id: string; label: string }>;
}

export async function loginOptions(): Promise<LoginOptions> {
  const res = await fetch('/api/auth/options');
  if (!res.ok) throw new Error(`login options: ${res.status}`);
  return (await res.json()) as LoginOptions;
}

/** Takes the session of a finished single sign-on (`#oidc={handoff}`); where to go now. */
export async function redeemSignIn(handoff: string): Promise<string> {
  const res = await fetch('/api/auth/oidc/redeem', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ handoff }),
  });
  if (!res.ok) throw new Error('expired');
  const body = (await res.json()) as Auth & { return_to: string; provider: string };
  localStorage.setItem(TOKEN_KEY, body.token);
  localStorage.setItem(USER_KEY, JSON.stringify(body.user));
  localStorage.setItem(SSO_KEY, body.provider);
  return body.return_to;
}

/**
 * Signs out: the server ends the session (its token stops working everywhere), then this page forgets it; a single
 * sign-on session goes on to its provider's logout page. `keepalive` lets the request finish while the page leaves.
 */
export function signOut(): void {
  const provider = localStorage.getItem(SSO_KEY);
  const token = localStorage.getItem(TOKEN_KEY);
  forget();
  const ended = token
    ? fetch('/api/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${token}` }, keepalive: true })
        .then(() => undefined)
        .catch(() => undefined)
    : Promise.resolve();
  if (provider && /^[a-z0-9-]+$/.test(provider))
    void ended.then(() => location.assign(`/api/auth/oidc/${provider}/logout`));
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
