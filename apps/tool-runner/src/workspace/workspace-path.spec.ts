import { ToolError } from '../tool-error';
import { isMemoryPath, nonToolPath, resolveWorkdir, resolveWorkspacePath } from './workspace-path';
import { tp } from '../testing-fixtures/workspace-fixture';

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
    expect(resolveWorkspacePath(tp('a/b.txt'))).toEqual({ virtual: '/workspace/a/b.txt', segments: ['a', 'b.txt'] });
    expect(resolveWorkspacePath(tp('b.txt'), '/workspace/src')).toEqual({
      virtual: '/workspace/src/b.txt',
      segments: ['src', 'b.txt'],
    });
    expect(resolveWorkspacePath(tp('./x/../y'), '/workspace/src')).toEqual({
      virtual: '/workspace/src/y',
      segments: ['src', 'y'],
    });
    expect(resolveWorkspacePath(tp('.'))).toEqual({ virtual: '/workspace', segments: [] });
    expect(resolveWorkspacePath(tp(''))).toEqual({ virtual: '/workspace', segments: [] });
    expect(resolveWorkspacePath(tp('dir/'), '/workspace')).toEqual({ virtual: '/workspace/dir', segments: ['dir'] });
  });

  it('accepts absolute paths inside /workspace, whatever the working directory', () => {
    expect(resolveWorkspacePath(tp('/workspace/a.txt'), '/workspace/src').virtual).toBe('/workspace/a.txt');
    expect(resolveWorkspacePath(tp('/workspace')).segments).toEqual([]);
    expect(resolveWorkspacePath(tp('/workspace//a//b')).segments).toEqual(['a', 'b']);
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
    const e = failure(() => resolveWorkspacePath(tp(path), workdir));
    expect(e.code).toBe('outside_workspace');
    expect(e.message).toContain(path);
  });

  it('refuses NUL bytes', () => {
    const e = failure(() => resolveWorkspacePath(tp('a\0b')));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(/NUL byte: "a\\u0000b"/);
  });

  it('validates the working directory', () => {
    expect(failure(() => resolveWorkdir('src')).message).toBe(
      'workdir must be an absolute path inside /workspace: src',
    );
    expect(failure(() => resolveWorkdir('/tmp')).code).toBe('outside_workspace');
    expect(failure(() => resolveWorkspacePath(tp('a'), '/workspace/../etc')).code).toBe('outside_workspace');
    expect(resolveWorkdir('/workspace/a/').virtual).toBe('/workspace/a');
  });

  it('recognises memory paths', () => {
    expect(isMemoryPath('user-memory/notes.md')).toBe(true);
    expect(isMemoryPath('shared-memory/x')).toBe(true);
    expect(isMemoryPath('user-memory')).toBe(true);
    expect(isMemoryPath('/workspace/user-memory/x')).toBe(false);
    expect(isMemoryPath('user-memoryx/y')).toBe(false);
  });
  it('takes a path argument only as the registry declares it (toolPath), never a plain string', () => {
    // @ts-expect-error an argument the gate did not judge as a path cannot reach the jail
    expect(resolveWorkspacePath('a.txt').virtual).toBe('/workspace/a.txt');
    expect(resolveWorkspacePath(nonToolPath('a.txt')).virtual).toBe('/workspace/a.txt');
  });
});
