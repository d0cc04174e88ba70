import { SkaldApiError, SkaldClient } from '@skald/client';
import type { Credential } from './config.ts';
import { CliError, EXIT, parseServerUrl } from './errors.ts';
import { ask, type Field } from './prompt.ts';
import { api, clientFor, resolveCredential, type Runtime } from './runtime.ts';

/** A credential read from stdin, at most this long. */
const MAX_SECRET_BYTES = 16 * 1024;

export interface LoginOptions {
  url?: string;
  email?: string;
  /** Read the password from stdin (one line; for scripts). */
  passwordStdin?: boolean;
  /** Log in with an API token: read from stdin with `--token-stdin`, else asked for. */
  token?: boolean;
  tokenStdin?: boolean;
}

/** The prompter: the terminal form, or a fake in tests. */
export type Asker = (fields: Field[]) => Promise<string[]>;

const firstLine = (s: string) => s.split(/\r?\n/)[0] ?? '';

/**
 * `skald login`: checks the credential against the server, then stores it (0600, under the XDG
 * config directory). The secret is never printed.
 */
export async function login(rt: Runtime, o: LoginOptions, askFn: Asker = ask): Promise<void> {
  const stored = await rt.store.read().catch(() => null);
  const url = parseServerUrl(
    o.url ?? rt.env.SKALD_URL ?? (await askFn([{ label: 'Server URL', initial: stored?.url }]))[0],
  );
  let credential: Credential;
  if (o.token || o.tokenStdin) {
    const token = o.tokenStdin
      ? firstLine(await rt.readStdin(MAX_SECRET_BYTES)).trim()
      : (await askFn([{ label: 'API token', secret: true }]))[0].trim();
    if (!token) throw new CliError('the API token is empty', EXIT.usage);
    try {
      // any signed-in route proves the token; listing one's tokens changes nothing
      await api(clientFor(rt, { url, token }), 'listTokens', {});
    } catch (e) {
      if (e instanceof SkaldApiError && e.status === 401)
        throw new CliError(`${url} refused the API token (unknown, revoked or of a disabled user)`, EXIT.unauthorized);
      throw e;
    }
    credential = { url, token, kind: 'token' };
  } else {
    const email = o.email ?? (await askFn([{ label: 'Email', initial: stored?.email }]))[0].trim();
    const password = o.passwordStdin
      ? firstLine(await rt.readStdin(MAX_SECRET_BYTES))
      : (await askFn([{ label: `Password for ${email}`, secret: true }]))[0];
    try {
      const r = await SkaldClient.login({ baseUrl: url, email, password, fetch: rt.fetch, WebSocket: rt.WebSocket });
      credential = { url, token: r.token, kind: 'password', email: r.user.email, expires_at: r.expires_at };
    } catch (e) {
      if (e instanceof SkaldApiError && e.status === 401)
        throw new CliError('wrong email or password', EXIT.unauthorized);
      if (e instanceof SkaldApiError && e.status === 400)
        throw new CliError(`the server refused the login: ${e.message}`, EXIT.usage);
      throw e;
    }
  }
  await rt.store.write(credential);
  const who = credential.email ? ` as ${credential.email}` : ' with an API token';
  const until = credential.expires_at ? `; it expires ${credential.expires_at}` : '';
  rt.out(`logged in to ${url}${who} (saved in ${rt.store.file}${until})\n`);
}

export async function logout(rt: Runtime): Promise<void> {
  const had = await rt.store.remove();
  rt.out(had ? `logged out (removed ${rt.store.file})\n` : 'not logged in\n');
}

/** `skald whoami`: the server and user the commands use, never the secret. */
export async function whoami(rt: Runtime, o: { json?: boolean }): Promise<void> {
  const c = await resolveCredential(rt);
  const from = rt.env.SKALD_TOKEN ? 'SKALD_TOKEN' : rt.store.file;
  const info = { url: c.url, kind: c.kind, email: c.email ?? null, expires_at: c.expires_at ?? null, from };
  if (o.json) return rt.out(`${JSON.stringify(info)}\n`);
  rt.out(
    `${c.url}${c.email ? ` as ${c.email}` : ''} (${c.kind === 'token' ? 'API token' : 'password login'}` +
      `${c.expires_at ? `, expires ${c.expires_at}` : ''}; from ${from})\n`,
  );
}
