// Path rules judge where the write lands. Real files on disk, the tool runner's own
// resolution (Jail.resolve, what `tools.resolve` answers) and its bound write (Jail.openWrite with the
// judged landing), and the approval gate's rule engine, wired as the session worker wires them:
// resolve → approval.check (lexical + landing) → tools.exec bound to the landing.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordAttackSuite } from '@skald/testing';
import { evaluate } from '../../apps/approval-service/src/rules/rule-engine';
import { GateResult, RuleRow } from '../../apps/approval-service/src/rules/gate-input';
import { RuleSet } from '../../apps/approval-service/src/rules/rule-set';
import { Jail } from '../../apps/tool-runner/src/workspace/jail';
import { resolveWorkspacePath, WorkspacePath } from '../../apps/tool-runner/src/workspace/workspace-path';
import { tp } from '../../apps/tool-runner/src/testing-fixtures/workspace-fixture';

const rule = (ord: number, action: string, toolPattern: string, pathPattern: string | null): RuleRow => ({
  id: `00000000-0000-4000-8000-${String(ord).padStart(12, '0')}`,
  toolPattern,
  pathPattern,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  action,
  priority: 0,
  ord,
  name: `rule ${ord}`,
});
const DENY_GIT = rule(1, 'deny', '@fs_write', '/workspace/.git/**');
const RC = { allowFsWrites: ['/workspace/proj/docs'] };

interface Outcome {
  decision: GateResult['decision'];
  landing: string | null;
  wrote: boolean;
  error?: string;
}

let root: string;
let jail: Jail;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'landing-'));
  await mkdir(join(root, '.git/hooks'), { recursive: true });
  await mkdir(join(root, 'proj/docs'), { recursive: true });
  jail = await Jail.at(root);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** resolve (tools.resolve) → evaluate (approval.check) → bound write (tools.exec), as the stack does. */
async function attempt(rules: RuleSet, path: string, runContext = RC): Promise<Outcome> {
  const p = resolveWorkspacePath(tp(path));
  const landing = await jail.resolve(p).then(
    (l) => l.virtual,
    () => null,
  );
  const d = evaluate(rules, {
    toolName: 'write_file',
    arguments: { path, content: 'x' },
    agentId: 'main',
    source: 'web',
    isAdmin: false,
    runContext,
    landing: [landing],
  });
  if (d.decision !== 'allow') return { decision: d.decision, landing, wrote: false };
  try {
    const bound: WorkspacePath | undefined = landing ? resolveWorkspacePath(tp(landing)) : undefined;
    const t = await jail.openWrite(p, { create: true, ...(bound ? { landing: bound } : {}) });
    await t.handle.write('x', 0);
    await t.close();
    return { decision: d.decision, landing, wrote: true };
  } catch (e) {
    return { decision: d.decision, landing, wrote: false, error: (e as Error).message };
  }
}

const exists = (rel: string) =>
  stat(join(root, rel)).then(
    () => true,
    () => false,
  );

describe('the .git/hooks case', () => {
  it('allow_fs_writes docs/, docs/assets → ../../.git/hooks, deny .git/**: not allowed, nothing lands', async () => {
    await symlink('../../.git/hooks', join(root, 'proj/docs/assets'));
    const o = await attempt(new RuleSet([DENY_GIT]), '/workspace/proj/docs/assets/post-checkout');
    expect(o).toMatchObject({ decision: 'deny', landing: '/workspace/.git/hooks/post-checkout', wrote: false });
    expect(await exists('.git/hooks/post-checkout')).toBe(false);
  });

  it('without the deny rule the pre-authorised docs/ alone does not allow it: a human is asked', async () => {
    await symlink('../../.git/hooks', join(root, 'proj/docs/assets'));
    const o = await attempt(new RuleSet([]), '/workspace/proj/docs/assets/post-checkout');
    expect(o).toMatchObject({ decision: 'require', wrote: false });
  });

  it('a plain file under docs/ is still pre-authorised and lands where it is named', async () => {
    const o = await attempt(new RuleSet([DENY_GIT]), '/workspace/proj/docs/readme.md');
    expect(o).toEqual({ decision: 'allow', landing: '/workspace/proj/docs/readme.md', wrote: true });
    expect(await exists('proj/docs/readme.md')).toBe(true);
  });
});

describe('symlink chains', () => {
  it('several relative hops: docs/a → b → c → ../../.git/hooks', async () => {
    await symlink('b', join(root, 'proj/docs/a'));
    await symlink('c', join(root, 'proj/docs/b'));
    await symlink('../../.git/hooks', join(root, 'proj/docs/c'));
    const o = await attempt(new RuleSet([DENY_GIT]), '/workspace/proj/docs/a/pre-commit');
    expect(o).toMatchObject({ decision: 'deny', landing: '/workspace/.git/hooks/pre-commit', wrote: false });
  });

  it('an absolute target (the workspace as the host sees it) is followed like a relative one', async () => {
    await symlink(join(await realpath(root), '.git/hooks'), join(root, 'proj/docs/abs'));
    const o = await attempt(new RuleSet([DENY_GIT]), '/workspace/proj/docs/abs/pre-push');
    expect(o).toMatchObject({ decision: 'deny', landing: '/workspace/.git/hooks/pre-push', wrote: false });
  });

  it('an absolute target as the model sees it (/workspace/…) leaves the jail: unresolved, not allowed', async () => {
    await symlink('/workspace/.git/hooks', join(root, 'proj/docs/model-abs'));
    const o = await attempt(new RuleSet([DENY_GIT]), '/workspace/proj/docs/model-abs/x');
    expect(o).toMatchObject({ decision: 'require', landing: null, wrote: false });
  });

  it('a link to a directory, then a link to a file inside it', async () => {
    await writeFile(join(root, '.git/config'), '[core]\n');
    await symlink('../..', join(root, 'proj/docs/up')); // → /workspace
    await symlink('../.git/config', join(root, 'proj/cfg')); // a file link
    const o = await attempt(
      new RuleSet([rule(1, 'deny', '@fs_write', '/workspace/.git/config')]),
      '/workspace/proj/docs/up/proj/cfg',
    );
    expect(o).toMatchObject({ decision: 'deny', landing: '/workspace/.git/config', wrote: false });
  });

  it('a dangling link whose target would be created: judged at the target, and never written through', async () => {
    await symlink('../../.git/hooks/post-merge', join(root, 'proj/docs/pm'));
    const denied = await attempt(new RuleSet([DENY_GIT]), '/workspace/proj/docs/pm');
    expect(denied).toMatchObject({ decision: 'deny', landing: '/workspace/.git/hooks/post-merge', wrote: false });
    // Allowed everywhere: the jail still refuses to create a file through a dangling link.
    const allowAll = new RuleSet([rule(1, 'allow', '@fs_write', '/workspace/**')]);
    const o = await attempt(allowAll, '/workspace/proj/docs/pm');
    expect(o).toMatchObject({ decision: 'allow', wrote: false });
    expect(o.error).toMatch(/symlink whose target does not exist/);
    expect(await exists('.git/hooks/post-merge')).toBe(false);
  });

  it('a file created through a real directory lands where it is named, missing parents included', async () => {
    const allowDocs = new RuleSet([rule(1, 'allow', '@fs_write', '/workspace/proj/docs/**')]);
    const o = await attempt(allowDocs, '/workspace/proj/docs/new/deeper/f.md', { allowFsWrites: [] });
    expect(o).toEqual({ decision: 'allow', landing: '/workspace/proj/docs/new/deeper/f.md', wrote: true });
  });
});

describe('a symlink swapped between the check and the write', () => {
  // Bounded: 2,000 attempts against a child process swapping docs/assets (rename of a fresh link over
  // it, atomic) between ../real-assets (allowed) and ../../.git/hooks (denied) at most 5,000,000 times.
  const ATTEMPTS = 2_000;

  it('every write either failed or landed at the path the gate judged; nothing reached .git/hooks', async () => {
    await mkdir(join(root, 'proj/real-assets'));
    await symlink('../real-assets', join(root, 'proj/docs/assets'));
    const swapper = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const [link, tmp] = process.argv.slice(1);
         const targets = ['../real-assets', '../../.git/hooks'];
         for (let i = 0; i < 5_000_000; i++) {
           try { fs.unlinkSync(tmp); } catch {}
           fs.symlinkSync(targets[i % 2], tmp); fs.renameSync(tmp, link);
         }`,
        join(root, 'proj/docs/assets'),
        join(root, 'proj/docs/.assets.tmp'),
      ],
      { stdio: 'ignore' },
    );
    const rules = new RuleSet([DENY_GIT]);
    const counts = { attempts: 0, allowed: 0, landed_at_judged: 0, failed_after_allow: 0, denied: 0, asked: 0 };
    const landedWrong: string[] = [];
    try {
      for (let i = 0; i < ATTEMPTS; i++) {
        const name = `f${i}`;
        const o = await attempt(rules, `/workspace/proj/docs/assets/${name}`, { allowFsWrites: ['/workspace/proj'] });
        counts.attempts++;
        if (o.decision === 'deny') counts.denied++;
        else if (o.decision === 'require') counts.asked++;
        else {
          counts.allowed++;
          if (!o.wrote) counts.failed_after_allow++;
          else if (o.landing === `/workspace/proj/real-assets/${name}` && (await exists(`proj/real-assets/${name}`)))
            counts.landed_at_judged++;
          else landedWrong.push(`${name} judged at ${o.landing}`);
        }
      }
    } finally {
      swapper.kill('SIGKILL');
    }
    const inHooks = (await readdir(join(root, '.git/hooks'))).filter((n) => /^f\d+$/.test(n));

    console.log(
      `swap race: ${JSON.stringify(counts)}, landed elsewhere ${landedWrong.length}, in .git/hooks ${inHooks.length}`,
    );
    recordAttackSuite('landing', 'swap-race', {
      write_attempts: counts.attempts,
      landed_elsewhere: landedWrong.length,
    });
    expect(landedWrong).toEqual([]);
    expect(inHooks).toEqual([]);
    expect(counts.landed_at_judged + counts.failed_after_allow).toBe(counts.allowed);
    // The race really raced: both sides of the swap were judged, and some writes were allowed.
    expect(counts.denied).toBeGreaterThan(0);
    expect(counts.allowed).toBeGreaterThan(0);
  }, 180_000);
});
