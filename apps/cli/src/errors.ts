import { SkaldApiError, SkaldConnectionError } from '@skald/client';

/** The exit codes of `skald`: documented in docs/cli.md. */
export const EXIT = {
  /** The command did what it was asked (`run`: the turn ended with a final answer). */
  ok: 0,
  /** An error: the server refused, could not be reached, or the turn failed. */
  error: 1,
  /** The command line is wrong (an unknown option, a missing argument). */
  usage: 2,
  /** `run --no-wait`: the turn waits for a human (an approval or a question); nothing was approved. */
  needsHuman: 3,
  /** Not logged in, or the credential expired or was revoked. */
  unauthorized: 4,
  /** Stopped with Ctrl-C. */
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI itself raises: its one-line message and the code the process exits with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: ExitCode = EXIT.error,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const LOGIN_HINT = 'run skald login';

/** The low-level cause of a failed `fetch` (Node puts the socket error in `cause`). */
function causeCode(e: unknown): string | null {
  let c: unknown = e;
  for (let i = 0; i < 4 && typeof c === 'object' && c !== null; i++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    c = (c as { cause?: unknown }).cause;
  }
  return null;
}

const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'nothing listens there',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  CERT_HAS_EXPIRED: 'its TLS certificate expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate cannot be verified',
};

/**
 * What went wrong, as one line a person can act on, and the exit code. `url` is the server the
 * command talked to (named when it cannot be reached).
 */
export function describeError(e: unknown, url?: string): { message: string; code: ExitCode } {
  if (e instanceof CliError) return { message: e.message, code: e.code };
  if (e instanceof SkaldApiError) {
    if (e.status === 401)
      return {
        message: `the server refused the credential (expired or revoked): ${LOGIN_HINT}`,
        code: EXIT.unauthorized,
      };
    if (e.status === 429)
      return {
        message: `too many requests${e.retryAfter !== undefined ? `: try again in ${e.retryAfter} s` : ''} (${e.message})`,
        code: EXIT.error,
      };
    const field = e.field ? ` (${e.field})` : '';
    return { message: `${e.message}${field} [${e.status} ${e.code}]`, code: EXIT.error };
  }
  if (e instanceof SkaldConnectionError) {
    if (e.reason === 'unauthorized') return { message: `${e.message}: ${LOGIN_HINT}`, code: EXIT.unauthorized };
    return { message: `the chat connection ended: ${e.message}`, code: EXIT.error };
  }
  const code = causeCode(e);
  if (e instanceof TypeError && (code !== null || /fetch failed/i.test(e.message))) {
    const why = (code && NETWORK[code]) ?? code ?? e.message;
    return { message: `cannot reach the server${url ? ` at ${url}` : ''}: ${why}`, code: EXIT.error };
  }
  if (e instanceof Error) return { message: e.message, code: EXIT.error };
  return { message: String(e), code: EXIT.error };
}

/** The server URL as given, checked and without a trailing slash or path: `http(s)://host[:port]`. */
export function parseServerUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new CliError(`bad server URL "${raw}": expected http(s)://host[:port]`, EXIT.usage);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new CliError(`bad server URL "${raw}": expected http(s)://host[:port], not ${u.protocol}`, EXIT.usage);
  if (u.username || u.password)
    throw new CliError(`bad server URL "${raw}": put no credentials in the URL`, EXIT.usage);
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash)
    throw new CliError(`bad server URL "${raw}": give the server's origin only (http(s)://host[:port])`, EXIT.usage);
  return u.origin;
}
