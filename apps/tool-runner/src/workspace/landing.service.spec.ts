/**
 * LandingService with a faked jail: where each path of a call lands — a file tool's path resolved
 * through the jail, an entry tool's (delete_file) by its entry, never followed; a memory document
 * where it is named; null where the jail refuses the path; and a call without paths never opens the
 * user's workspace.
 */
import { newTestService } from '@skald/testing/unit';
import { LandingService, ResolveRequest } from './landing.service';
import { WorkspacesService } from './workspaces.service';

const req = (name: string, args: Record<string, unknown>, wd = '/workspace') =>
  ({ actor: { userId: 'u1', role: 'user' }, name, arguments: args, working_directory: wd }) as ResolveRequest;

function setUp() {
  const t = newTestService(LandingService);
  const jail = {
    resolve: jest.fn(async (p: { virtual: string }) => {
      if (p.virtual.includes('escape')) throw new Error('outside the workspace');
      return { virtual: `/real${p.virtual}` };
    }),
    resolveEntry: jest.fn(async (p: { virtual: string }) => ({ landing: { virtual: `/entry${p.virtual}` } })),
  };
  t.mock(WorkspacesService).jail.mockResolvedValue(jail as never);
  return { ...t, jail };
}

describe('LandingService', () => {
  it("resolves a file tool's path through the user's jail", async () => {
    const { sut, jail, mock } = setUp();
    expect(await sut.resolve(req('write_file', { path: 'notes/a.md', content: 'x' }))).toEqual({
      landing: ['/real/workspace/notes/a.md'],
    });
    expect(mock(WorkspacesService).jail).toHaveBeenCalledWith('u1');
    expect(jail.resolveEntry).not.toHaveBeenCalled();
  });

  it('lands an entry tool (delete_file) by its entry, not by what a symlink points at', async () => {
    const { sut, jail } = setUp();
    expect(await sut.resolve(req('delete_file', { path: 'link' }))).toEqual({ landing: ['/entry/workspace/link'] });
    expect(jail.resolve).not.toHaveBeenCalled();
  });

  it('answers null for a path the jail refuses, or a working directory outside the workspace', async () => {
    const { sut, jail } = setUp();
    expect(await sut.resolve(req('write_file', { path: 'escape/x', content: '' }))).toEqual({ landing: [null] });
    jail.resolve.mockClear();
    expect(await sut.resolve(req('write_file', { path: 'a', content: '' }, '/etc'))).toEqual({ landing: [null] });
    expect(jail.resolve).not.toHaveBeenCalled();
  });

  it('does not open the workspace for a call that names no path', async () => {
    const { sut, mock } = setUp();
    expect(await sut.resolve(req('web_search', { query: 'x' }))).toEqual({ landing: [] });
    expect(mock(WorkspacesService).jail).not.toHaveBeenCalled();
  });
});
