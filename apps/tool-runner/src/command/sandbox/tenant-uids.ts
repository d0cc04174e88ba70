import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, lchown, lstat, mkdir, open, opendir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Directory beside the workspaces holding one claim file per tenant uid (`<uid>` → the workspace's name). */
export const CLAIMS_DIR = '.sandbox-uids';

/** Capability bits (linux/capability.h) the runner needs to run sandboxes under tenant uids. */
const CAP_CHOWN = 0;
const CAP_SETGID = 6;
const CAP_SETUID = 7;

/** Whether this process is root with CAP_SETUID, CAP_SETGID and CAP_CHOWN in force. */
export function canSwitchUids(status = readStatus(), uid = process.getuid?.() ?? -1): boolean {
  if (uid !== 0) return false;
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  if (!m) return false;
  const eff = BigInt(`0x${m[1]}`);
  return [CAP_CHOWN, CAP_SETGID, CAP_SETUID].every((c) => ((eff >> BigInt(c)) & 1n) === 1n);
}

function readStatus(): string {
  try {
    return readFileSync('/proc/self/status', 'utf8');
  } catch {
    return '';
  }
}

/**
 * One uid (and gid of the same number) per tenant, outside the sandbox, for a runner that is root:
 * root's processes are exempt from RLIMIT_NPROC, so a sandbox must run under an unprivileged uid for
 * its process count to hold, and a uid of its own per tenant keeps one tenant's files out of reach of
 * another tenant's processes on the host (a workspace is `0700`, owned by its tenant's uid).
 *
 * The tenant's uid is recorded where its files are: the workspace directory is owned by it, and a
 * claim file `<workspaces>/.sandbox-uids/<uid>` (created exclusively, so two replicas on a shared
 * volume never hand out one uid twice) names the workspace. `base` itself is kept for the runner's
 * self-test; tenants get `base + 1 … base + count - 1`. A uid is never given to another workspace.
 */
export class TenantUids {
  private readonly known = new Map<string, Promise<number>>();

  constructor(
    readonly base: number,
    readonly count: number,
  ) {}

  /** The uid of the self-test's throw-away workspace (never a tenant's). */
  get selfTestUid(): number {
    return this.base;
  }

  /** The tenant uid owning `workspace` (a directory `<workspaces>/<name>`), claimed on first use. */
  uidFor(workspace: string): Promise<number> {
    let p = this.known.get(workspace);
    if (!p) {
      p = this.resolve(workspace);
      this.known.set(workspace, p);
      p.catch(() => this.known.delete(workspace));
    }
    return p;
  }

  private async resolve(workspace: string): Promise<number> {
    const st = await lstat(workspace);
    if (!st.isDirectory()) throw new Error(`${workspace} is not a directory`);
    const claims = join(dirname(workspace), CLAIMS_DIR);
    const name = basename(workspace);
    const owner = st.uid;
    if (owner > this.base && owner < this.base + this.count && (await claimOf(claims, owner)) === name) {
      if (st.gid !== owner || (st.mode & 0o777) !== 0o700) await prepare(workspace, owner);
      return owner;
    }
    await mkdir(claims, { recursive: true, mode: 0o700 });
    await searchable(dirname(workspace));
    const slots = this.count - 1;
    const start = createHash('sha256').update(name).digest().readUInt32BE(0) % slots;
    for (let i = 0; i < slots; i++) {
      const uid = this.base + 1 + ((start + i) % slots);
      const file = join(claims, String(uid));
      const mine = await open(file, 'wx', 0o600).then(
        async (h) => {
          await h.writeFile(name);
          await h.close();
          return true;
        },
        async (e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
          // A claim of this workspace (another replica's at the same moment: every replica probes
          // the same uids in the same order, or one whose hand-over was interrupted) is taken up.
          return (await settledClaimOf(claims, uid)) === name;
        },
      );
      if (!mine) continue;
      await chownTree(workspace, uid);
      await prepare(workspace, uid);
      return uid;
    }
    throw new Error(`no free sandbox uid in ${this.base + 1}…${this.base + this.count - 1} (SKALD_SANDBOX_UID_COUNT)`);
  }
}

/**
 * bwrap, running as a tenant uid, binds the workspace by its path, so the workspaces' directory and
 * every directory above it must be searchable by others (`o+x`; listing is not needed). The
 * workspaces' directory itself is the runner's and gets `o+x` (`0701` from `0700`); a directory above it that
 * is not is the operator's to change, and is named.
 */
async function searchable(root: string): Promise<void> {
  const st = await lstat(root);
  if ((st.mode & 0o001) === 0) await chmod(root, (st.mode & 0o7777) | 0o001);
  for (let d = dirname(root); ; d = dirname(d)) {
    if (((await lstat(d)).mode & 0o001) === 0)
      throw new Error(
        `${d} is not searchable by the sandbox uids (mode o+x), so the workspaces below it cannot be bound into a sandbox; ` +
          `chmod o+x ${d}, or put SKALD_WORKSPACES elsewhere`,
      );
    if (d === '/') return;
  }
}

/** A claim's name, waiting (at most 1 s) while it is empty: created, not yet written. */
async function settledClaimOf(claims: string, uid: number): Promise<string | null> {
  for (let i = 0; i < 20; i++) {
    const name = await claimOf(claims, uid);
    if (name !== '') return name;
    await new Promise((r) => setTimeout(r, 50));
  }
  return claimOf(claims, uid);
}

async function claimOf(claims: string, uid: number): Promise<string | null> {
  return readFile(join(claims, String(uid)), 'utf8').catch(() => null);
}

/** The workspace root: owned by its tenant uid, `0700`. */
async function prepare(workspace: string, uid: number): Promise<void> {
  await lchown(workspace, uid, uid);
  await chmod(workspace, 0o700);
}

/** Gives every entry below `dir` (symlinks themselves, never followed) to `uid`:`uid`. */
export async function chownTree(dir: string, uid: number): Promise<void> {
  const stack = [dir];
  for (let d = stack.pop(); d !== undefined; d = stack.pop()) {
    await lchown(d, uid, uid);
    const entries = await opendir(d).catch(() => null);
    if (!entries) continue;
    for await (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else await lchown(p, uid, uid).catch(() => undefined);
    }
  }
}
