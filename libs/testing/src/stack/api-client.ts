import type { Role } from '@skald/contracts';
/** A small REST client for tests, holding one bearer token. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    public token?: string,
    /** The logged-in user, when this client came from `login`. */
    readonly user?: { id: string; email: string; role: Role },
  ) {}

  static async login(baseUrl: string, email: string, password: string): Promise<ApiClient> {
    const client = new ApiClient(baseUrl);
    const r = await whileBusy(() => client.request('POST', '/api/auth/login', { email, password }));
    if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
    const body = r.body as { token: string; user: { id: string; email: string; role: Role } };
    return new ApiClient(baseUrl, body.token, body.user);
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: unknown; headers: Headers }> {
    const res = await fetch(new URL(path, this.baseUrl), {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  get<T = unknown>(path: string): Promise<{ status: number; body: T }> {
    return this.request('GET', path) as Promise<{ status: number; body: T }>;
  }

  post<T = unknown>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
    return this.request('POST', path, body ?? {}) as Promise<{ status: number; body: T }>;
  }

  /** Creates a user with the admin client; returns a logged-in client for it. */
  async createUser(email: string, password: string, role: Role = 'user'): Promise<ApiClient> {
    const r = await whileBusy(() => this.request('POST', '/api/admin/users', { email, password, role }));
    if (r.status !== 201) throw new Error(`create user failed: ${r.status} ${JSON.stringify(r.body)}`);
    return ApiClient.login(this.baseUrl, email, password);
  }
}

/**
 * A request the gateway answered 503 with `Retry-After` (its password hashing is saturated: a
 * burst of logins or user creations) is sent again after that many seconds, as a client should;
 * at most 30 tries.
 */
async function whileBusy<T extends { status: number; headers: Headers }>(send: () => Promise<T>): Promise<T> {
  let r = await send();
  for (let i = 1; i < 30 && r.status === 503 && r.headers.get('retry-after'); i++) {
    await new Promise((done) => setTimeout(done, Math.min(5, Number(r.headers.get('retry-after')) || 1) * 1000));
    r = await send();
  }
  return r;
}
