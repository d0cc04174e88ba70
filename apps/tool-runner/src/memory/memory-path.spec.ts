import { ToolError } from '../tool-error';
import { parseMemoryPath } from './memory-path';
import { tp } from '../testing-fixtures/workspace-fixture';

describe('parseMemoryPath', () => {
  it('splits scope and normalised key', () => {
    expect(parseMemoryPath(tp('user-memory/notes/./a.md'))).toEqual({
      scope: 'user',
      key: 'notes/a.md',
      virtual: 'user-memory/notes/a.md',
    });
    expect(parseMemoryPath(tp('shared-memory/x/../y.md'))).toEqual({
      scope: 'shared',
      key: 'y.md',
      virtual: 'shared-memory/y.md',
    });
    expect(parseMemoryPath(tp('user-memory'))).toEqual({ scope: 'user', key: '', virtual: 'user-memory' });
    expect(parseMemoryPath(tp('user-memory/'))).toEqual({ scope: 'user', key: '', virtual: 'user-memory' });
  });

  it.each([
    ['user-memory/../shared-memory/x', 'outside_workspace'],
    ['user-memory/a/../../x', 'outside_workspace'],
    ['user-memory/a\0b', 'invalid_argument'],
    [`user-memory/${'a'.repeat(600)}`, 'invalid_argument'],
    ['/workspace/user-memory/x', 'invalid_argument'],
  ])('refuses %j', (path, code) => {
    let err: unknown;
    try {
      parseMemoryPath(tp(path));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ToolError);
    expect((err as ToolError).code).toBe(code);
  });
});
