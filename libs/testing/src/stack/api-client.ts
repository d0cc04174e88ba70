/** A small REST client for tests, holding one bearer token. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    public token?: string,
    /** The logged-in user, when this client came from `login`. */
    readonly user?: { id: string; email: string; role: 'user' | 'admin' },
  ) {}

  static async login(baseUrl: string, email: string, password: string): Promise<ApiClient> {
    const r = await new ApiClient(baseUrl).request('POST', '/api/auth/login', { email, password });
    if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
    const body = r.body as { token: string; user: { id: string; email: string; role: 'user' | 'admin' } };
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
  async createUser(email: string, password: string, role: 'user' | 'admin' = 'user'): Promise<ApiClient> {
    const r = await this.post('/api/admin/users', { email, password, role });
    if (r.status !== 201) throw new Error(`create user failed: ${r.status} ${JSON.stringify(r.body)}`);
    return ApiClient.login(this.baseUrl, email, password);
  }
}
