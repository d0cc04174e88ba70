import { ToolError } from '../tool-error';
import { isMemoryPath, resolveWorkdir, resolveWorkspacePath } from './workspace-path';

function failure(fn: () => unknown): ToolError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error('expected a ToolError');
}

describe('resolveWorkspacePath', () => {
  it('resolves relative paths against the working directory (default /workspace)', () => {
    expect(resolveWorkspacePath('a/b.txt')).toEqual({ virtual: '/workspace/a/b.txt', segments: ['a', 'b.txt'] });
    expect(resolveWorkspacePath('b.txt', '/workspace/src')).toEqual({
      virtual: '/workspace/src/b.txt',
      segments: ['src', 'b.txt'],
    });
    expect(resolveWorkspacePath('./x/../y', '/workspace/src')).toEqual({
      virtual: '/workspace/src/y',
      segments: ['src', 'y'],
    });
    expect(resolveWorkspacePath('.')).toEqual({ virtual: '/workspace', segments: [] });
    expect(resolveWorkspacePath('')).toEqual({ virtual: '/workspace', segments: [] });
    expect(resolveWorkspacePath('dir/', '/workspace')).toEqual({ virtual: '/workspace/dir', segments: ['dir'] });
  });

  it('accepts absolute paths inside /workspace, whatever the working directory', () => {
    expect(resolveWorkspacePath('/workspace/a.txt', '/workspace/src').virtual).toBe('/workspace/a.txt');
    expect(resolveWorkspacePath('/workspace').segments).toEqual([]);
    expect(resolveWorkspacePath('/workspace//a//b').segments).toEqual(['a', 'b']);
  });

  it.each([
    ['../etc/passwd', '/workspace'],
    ['../../x', '/workspace/src'],
    ['src/../../x', '/workspace'],
    ['/etc/passwd', '/workspace'],
    ['/workspace/../etc/passwd', '/workspace'],
    ['/workspacefoo/a', '/workspace'],
    ['/', '/workspace'],
    ['../other-user/secret', '/workspace'],
  ])('refuses %s (from %s) as outside the workspace, naming the path', (path, workdir) => {
    const e = failure(() => resolveWorkspacePath(path, workdir));
    expect(e.code).toBe('outside_workspace');
    expect(e.message).toContain(path);
  });

  it('refuses NUL bytes', () => {
    const e = failure(() => resolveWorkspacePath('a\0b'));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(/NUL byte: "a\\u0000b"/);
  });

  it('validates the working directory', () => {
    expect(failure(() => resolveWorkdir('src')).message).toBe(
      'workdir must be an absolute path inside /workspace: src',
    );
    expect(failure(() => resolveWorkdir('/tmp')).code).toBe('outside_workspace');
    expect(failure(() => resolveWorkspacePath('a', '/workspace/../etc')).code).toBe('outside_workspace');
    expect(resolveWorkdir('/workspace/a/').virtual).toBe('/workspace/a');
  });

  it('recognises memory paths', () => {
    expect(isMemoryPath('user-memory/notes.md')).toBe(true);
    expect(isMemoryPath('shared-memory/x')).toBe(true);
    expect(isMemoryPath('user-memory')).toBe(true);
    expect(isMemoryPath('/workspace/user-memory/x')).toBe(false);
    expect(isMemoryPath('user-memoryx/y')).toBe(false);
  });
});
