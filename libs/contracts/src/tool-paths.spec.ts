import { posix } from 'node:path';
import fc from 'fast-check';
import { z } from 'zod';
import { defineTool, EVERYWHERE, toolPath, toolPathOrBase } from './tool-registry/define-tool';
import {
  effectiveCallPathArgs,
  effectiveCallPaths,
  isMemoryPath,
  normalizeLexical,
  parentDirectory,
  resolveCallBase,
  resolveToolPath,
  toolCallPaths,
  WORKSPACE_ROOT,
} from './tool-paths';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`tool-paths properties: seed ${SEED} (FC_SEED=${SEED} replays)`);

const virtualOf = (path: string, args: { workdir?: unknown } = {}, wd: string | null = null) => {
  const r = resolveToolPath(path, args, wd);
  return r.ok ? r.value.virtual : `error:${r.code}`;
};

describe('the shared tool path resolver', () => {
  it.each([
    // [path, workdir argument, session working directory, effective path]
    ['a.txt', undefined, null, '/workspace/a.txt'],
    ['a.txt', undefined, '/workspace/proj', '/workspace/proj/a.txt'],
    ['a.txt', undefined, 'proj', '/workspace/proj/a.txt'],
    ['a.txt', '/workspace/other', '/workspace/proj', '/workspace/other/a.txt'],
    ['a.txt', 'sub', '/workspace/proj', '/workspace/proj/sub/a.txt'],
    ['a.txt', '..', '/workspace/proj', '/workspace/a.txt'],
    ['./a.txt', undefined, '/workspace/proj', '/workspace/proj/a.txt'],
    ['../a.txt', undefined, '/workspace/proj', '/workspace/a.txt'],
    ['../../a.txt', undefined, '/workspace/proj', 'error:outside_workspace'],
    ['a.txt', '/etc', null, 'error:outside_workspace'],
    ['a.txt', '../..', '/workspace/proj', 'error:outside_workspace'],
    ['a.txt', undefined, '/etc', 'error:outside_workspace'],
    ['/workspace/x', '/workspace/other', '/workspace/proj', '/workspace/x'],
    ['/workspace/../etc/passwd', undefined, null, 'error:outside_workspace'],
    ['/workspacefoo', undefined, null, 'error:outside_workspace'],
    ['/workspace//a//b/', undefined, null, '/workspace/a/b'],
    ['', undefined, '/workspace/proj', '/workspace/proj'],
    ['.', undefined, '/workspace/proj', '/workspace/proj'],
    // memory documents: the same document whatever the spelling, never moved by a working directory
    ['user-memory/x', undefined, '/workspace/proj', 'user-memory/x'],
    ['./user-memory/x', undefined, '/workspace/proj', 'user-memory/x'],
    ['.//user-memory//x', '/workspace/other', null, 'user-memory/x'],
    ['a/../user-memory/x', undefined, null, 'user-memory/x'],
    ['user-memory/a/../b', undefined, null, 'user-memory/b'],
    ['user-memory', undefined, null, 'user-memory'],
    ['user-memory/', undefined, null, 'user-memory'],
    ['shared-memory/team.md', 'sub', '/workspace/p', 'shared-memory/team.md'],
    ['user-memory/../x', undefined, null, 'error:outside_workspace'],
    ['user-memory/../shared-memory/x', undefined, null, 'error:outside_workspace'],
    ['./user-memory/../../x', undefined, null, 'error:outside_workspace'],
    ['user-memoryx/y', undefined, null, '/workspace/user-memoryx/y'],
    ['/workspace/user-memory/x', undefined, null, '/workspace/user-memory/x'],
    ['a\0b', undefined, null, 'error:invalid_argument'],
    [`user-memory/${'k'.repeat(600)}`, undefined, null, 'error:invalid_argument'],
    ['a.txt', 'user-memory', null, 'error:invalid_argument'],
    ['a.txt', 42, null, 'error:invalid_argument'],
  ])('%j (workdir %j, session %j) → %s', (path, workdir, wd, want) => {
    expect(virtualOf(path, { workdir }, wd)).toBe(want);
  });

  it('execute_cmd touches its working directory; list_files and grep_files without a path work on the base', () => {
    const v = (tool: string, args: Record<string, unknown>, wd: string | null) =>
      effectiveCallPaths(tool, args, wd).map((r) => (r.ok ? r.value.virtual : `error:${r.code}`));
    expect(v('execute_cmd', { command: 'ls' }, '/workspace/p')).toEqual(['/workspace/p']);
    expect(v('execute_cmd', { command: 'ls', workdir: 'sub' }, '/workspace/p')).toEqual(['/workspace/p/sub']);
    expect(v('execute_cmd', { command: 'ls', workdir: '/tmp' }, null)).toEqual(['error:outside_workspace']);
    expect(v('list_files', {}, '/workspace/p')).toEqual(['/workspace/p']);
    // The runner greps the base when no path is given: the gate judges that same directory.
    expect(v('grep_files', { pattern: 'x' }, '/workspace/p')).toEqual(['/workspace/p']);
    expect(v('read_file', {}, null)).toEqual([]);
    expect(v('read_file', { path: 7 }, null)).toEqual(['error:invalid_argument']);
    expect(v('memory_search', { query: 'x', path: 'a' }, null)).toEqual([]);
  });

  it('resolves every argument a tool declares with toolPath, not only `path`', () => {
    // A new tool with a second path argument: the gate, the landing and the memory routing all
    // read a call's paths from here, so declaring `from` with toolPath is all they need.
    const copy = defineTool({
      name: 'copy_file',
      description: 'Copy a file.',
      args: z.object({ from: toolPath('Source'), path: toolPath('Destination'), note: z.string().optional() }),
      category: 'filesystem',
      access: 'write',
      restartHint: 'reExecute',
      offeredAt: EVERYWHERE,
      defaultRule: 'require',
    });
    expect(copy.pathArgs).toEqual([
      { name: 'from', defaultsToBase: false },
      { name: 'path', defaultsToBase: false },
    ]);
    const paths = toolCallPaths(copy, { from: '../../etc/passwd', path: 'user-memory/x', note: '/etc' }, null);
    expect(paths.map((p) => [p.arg, p.target.ok ? p.target.value.virtual : p.target.code])).toEqual([
      ['from', 'outside_workspace'],
      ['path', 'user-memory/x'],
    ]);
    // A defaulted path argument works on the base; optional ones the call leaves out are not paths.
    const listing = defineTool({
      name: 'tree',
      description: 'Show a tree.',
      args: z.object({ root: toolPathOrBase('Root'), also: toolPath('Other').optional() }),
      category: 'filesystem',
      access: 'read',
      restartHint: 'reExecute',
      offeredAt: EVERYWHERE,
      defaultRule: 'allow',
    });
    expect(listing.pathArgs).toEqual([
      { name: 'root', defaultsToBase: true },
      { name: 'also', defaultsToBase: false },
    ]);
    expect(toolCallPaths(listing, {}, '/workspace/p').map((p) => p.arg)).toEqual(['root']);
    expect(effectiveCallPathArgs('list_files', {})).toEqual(['path']);
    expect(effectiveCallPathArgs('execute_cmd', { command: 'ls' })).toEqual(['workdir']);
  });

  it('names the directory of a target (narrow session approvals)', () => {
    const dir = (p: string) => {
      const r = resolveToolPath(p, {}, null);
      if (!r.ok) throw new Error(r.message);
      return parentDirectory(r.value);
    };
    expect(dir('src/a.ts')).toBe('/workspace/src');
    expect(dir('a.ts')).toBe('/workspace');
    expect(dir('/workspace')).toBe('/workspace');
    expect(dir('user-memory/notes/a.md')).toBe('user-memory/notes');
    expect(dir('user-memory/a.md')).toBe('user-memory');
  });

  const segment = fc.constantFrom('a', 'b', 'sub', '.', '..', '', 'user-memory', 'shared-memory', 'x y', '\u00a0', 'ü');
  const relPath = fc.array(segment, { maxLength: 8 }).map((s) => s.join('/'));
  const anyPath = fc.oneof(
    relPath,
    relPath.map((p) => `/${p}`),
    relPath.map((p) => `/workspace/${p}`),
    fc.string(),
  );

  it('normalises like POSIX path.normalize (differential, generated)', () => {
    fc.assert(
      fc.property(anyPath, (p) => {
        const mine = normalizeLexical(p);
        const node = posix.normalize(p === '' ? '.' : p).replace(/(.)\/+$/, '$1');
        // node keeps `..` above `/` out and `.` for empty, as we do; it keeps a trailing slash, we drop it
        expect(mine).toBe(node === '/' || !node.endsWith('/') ? node : node.slice(0, -1));
      }),
      { seed: SEED, numRuns: 5000 },
    );
  });

  it('never throws, stays inside the workspace or memory, and agrees with isMemoryPath (generated)', () => {
    const wd = fc.oneof(
      fc.constant(null),
      relPath.map((p) => `/workspace/${p}`),
      relPath,
    );
    const workdir = fc.oneof(
      fc.constant(undefined),
      relPath,
      relPath.map((p) => `/workspace/${p}`),
      fc.string(),
    );
    fc.assert(
      fc.property(anyPath, workdir, wd, (p, w, s) => {
        const r = resolveToolPath(p, { workdir: w }, s);
        if (!r.ok) return;
        const v = r.value.virtual;
        if (r.value.kind === 'memory') {
          expect(isMemoryPath(p)).toBe(true);
          expect(v === 'user-memory' || v === 'shared-memory' || /^(user|shared)-memory\/./.test(v)).toBe(true);
          expect(v.split('/')).not.toContain('..');
        } else {
          expect(isMemoryPath(p)).toBe(false);
          expect(v === WORKSPACE_ROOT || v.startsWith(`${WORKSPACE_ROOT}/`)).toBe(true);
          expect(v.split('/').slice(1)).not.toContain('..');
          expect(v.split('/').slice(1)).not.toContain('');
          expect(`/${r.value.segments.join('/')}`).toBe(v === WORKSPACE_ROOT ? '/' : v.slice(WORKSPACE_ROOT.length));
        }
        // resolving an absolute result again is a fixed point
        if (r.value.kind === 'workspace') expect(virtualOf(v, {}, null)).toBe(v);
        // a relative workspace path is the base joined with it, lexically
        const base = resolveCallBase(w, s);
        if (base.ok && r.value.kind === 'workspace' && !p.startsWith('/'))
          expect(v).toBe(posix.join(base.value.virtual, p).replace(/(.)\/+$/, '$1'));
      }),
      { seed: SEED, numRuns: 5000 },
    );
  });
});
