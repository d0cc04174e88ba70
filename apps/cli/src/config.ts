import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/** What `skald login` stores: the server and one credential for it. */
export interface Credential {
  /** The gateway's origin (`https://skald.example.com`). */
  url: string;
  /** A login's JWT or an API token. */
  token: string;
  /** How it was obtained: a password login (expires) or an API token (until revoked). */
  kind: 'password' | 'token';
  /** The user it belongs to, when the server said. */
  email?: string;
  /** When a password login's JWT ends. */
  expires_at?: string;
}

/** Where the credential file lives: `$XDG_CONFIG_HOME/skald/` (default `~/.config/skald/`). */
export function configDir(env: NodeJS.ProcessEnv, home: string): string {
  const xdg = env.XDG_CONFIG_HOME;
  // The XDG spec: a relative path is invalid and is ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(home, '.config');
  return path.join(base, 'skald');
}

const FILE = 'credentials.json';
/** Bigger than any credential file the CLI writes: anything larger is not one. */
const MAX_FILE_BYTES = 64 * 1024;

function isCredential(v: unknown): v is Credential {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c.url === 'string' &&
    typeof c.token === 'string' &&
    c.token !== '' &&
    (c.kind === 'password' || c.kind === 'token') &&
    (c.email === undefined || typeof c.email === 'string') &&
    (c.expires_at === undefined || typeof c.expires_at === 'string')
  );
}

/**
 * The credential store: one JSON file, mode 0600, in a directory of mode 0700 (both set again on
 * every write, so a looser directory made by hand is tightened). Written to a temporary file of
 * mode 0600 and renamed over the old one, so a reader never sees half a file.
 */
export class ConfigStore {
  constructor(readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, FILE);
  }

  /** The stored credential, or null when there is none. A file that is not one is an error naming it. */
  async read(): Promise<Credential | null> {
    let text: string;
    try {
      const s = await stat(this.file);
      if (s.size > MAX_FILE_BYTES) throw new Error(`${this.file} is not a skald credential file: run skald login`);
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (!isCredential(parsed)) throw new Error(`${this.file} is not a skald credential file: run skald login`);
    return parsed;
  }

  async write(c: Credential): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    const tmp = path.join(this.dir, `.${FILE}.${process.pid}.tmp`);
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.chmod(0o600);
      await fh.writeFile(`${JSON.stringify(c, null, 2)}\n`, 'utf8');
    } finally {
      await fh.close();
    }
    await rename(tmp, this.file);
  }

  /** Forgets the credential; true when there was one. */
  async remove(): Promise<boolean> {
    try {
      await stat(this.file);
    } catch {
      return false;
    }
    await rm(this.file, { force: true });
    return true;
  }
}
