import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';

/** A client the test OpenID Provider knows (oidc-provider's client metadata). */
export interface OpClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  token_endpoint_auth_method?: string;
}

/** The client `id` of a gateway at `base` (its secret is `{id}-secret`): redirect URIs of its callback and `/`. */
export function opClient(base: string, id: string): OpClient {
  return {
    client_id: id,
    client_secret: `${id}-secret`,
    redirect_uris: [`${base}/api/auth/oidc/${id}/callback`],
    post_logout_redirect_uris: [`${base}/`],
    token_endpoint_auth_method: 'client_secret_post',
  };
}

/** The test OpenID Provider (test/support/oidc-op-server.mjs) in a child process, driven over IPC. */
export class TestOp {
  private seq = 0;
  private constructor(
    private readonly child: ChildProcess,
    readonly issuer: string,
  ) {}

  static async start(clients: OpClient[], port = 0): Promise<TestOp> {
    const child = fork(join(__dirname, 'oidc-op-server.mjs'), [], {
      env: { ...process.env, OIDC_OP_CLIENTS: JSON.stringify(clients), OIDC_OP_PORT: String(port) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const issuer = await new Promise<string>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`test OP exited with ${code}`)));
      child.once('message', (m: { ready?: boolean; issuer?: string }) =>
        m.ready ? resolve(m.issuer!) : reject(new Error('test OP: unexpected first message')),
      );
    });
    child.removeAllListeners('exit');
    return new TestOp(child, issuer);
  }

  /** An entry of `SKALD_OIDC_PROVIDERS` for the `opClient` named `id` on this provider. */
  provider(id: string, extra: Record<string, unknown> = {}, label = id): Record<string, unknown> {
    return {
      id,
      label,
      issuer: this.issuer,
      client_id: id,
      client_secret: `${id}-secret`,
      scopes: ['openid', 'email', 'groups'],
      ...extra,
    };
  }

  private send(msg: Record<string, unknown>): Promise<void> {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      const on = (m: { seq?: number; ok?: boolean; error?: string }) => {
        if (m.seq !== seq) return;
        this.child.off('message', on);
        if (m.ok) resolve();
        else reject(new Error(m.error));
      };
      this.child.on('message', on);
      this.child.send({ ...msg, seq });
    });
  }

  /** Sets the claims of an account (`sub` is its id). */
  account(id: string, claims: Record<string, unknown>): Promise<void> {
    return this.send({ cmd: 'account', id, claims });
  }
  /** The account the next sign-in is (the provider's login step ends at once as it). */
  next(id: string): Promise<void> {
    return this.send({ cmd: 'next', id });
  }
  /** A new signing key replaces the old one. */
  rotate(): Promise<void> {
    return this.send({ cmd: 'rotate' });
  }
  /** The ID token from the token endpoint gets `sub: mallory`, its signature unchanged. */
  tamper(on: boolean): Promise<void> {
    return this.send({ cmd: 'tamper', on });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill();
    await exited;
  }
}
