import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { PreviewService } from './preview.service';

/**
 * A write whose path resolves outside the workspace is refused by `tools.preview` with a sentence
 * naming the path (the worker then asks nobody): lexically, through a symlink to an existing file
 * outside, through a dangling symlink pointing outside, through a symlinked directory.
 */
describe('tools.preview: paths outside the workspace', () => {
  let fx: WorkspaceFixture;
  let outside: string;
  let previews: PreviewService;

  beforeEach(async () => {
    fx = await workspaceFixture();
    outside = await mkdtemp(join(tmpdir(), 'skald-outside-'));
    await writeFile(join(outside, 'secret.txt'), 'secret');
    previews = new PreviewService(fx.workspaces);
  });
  afterEach(async () => {
    await fx.cleanup();
    await rm(outside, { recursive: true, force: true });
  });

  const req = (name: string, args: Record<string, unknown>) => ({
    actor: { userId: fx.userId, role: 'user' as const },
    session_id: randomUUID(),
    tool_call_id: randomUUID(),
    name,
    arguments: args,
  });

  it.each([
    [
      'a link to a file outside',
      async () => symlink(join(outside, 'secret.txt'), join(fx.home, 'link.txt')),
      'link.txt',
    ],
    [
      'a dangling link pointing outside',
      async () => symlink(join(outside, 'missing.txt'), join(fx.home, 'link.txt')),
      'link.txt',
    ],
    [
      'a relative dangling link climbing out',
      async () => symlink('../../../../../../tmp/skald-nowhere/x', join(fx.home, 'link.txt')),
      'link.txt',
    ],
    ['a linked directory outside', async () => symlink(outside, join(fx.home, 'dir')), 'dir/new.txt'],
    ['a lexical escape', async () => undefined, '../../etc/passwd'],
  ])('%s: refused, naming the path', async (_label, setup, path) => {
    await setup();
    for (const [name, args] of [
      ['write_file', { path, content: 'x' }],
      ['append_file', { path, content: 'x' }],
    ] as const) {
      const r = await previews.reply(req(name, args));
      expect(r.preview).toBeNull();
      expect(r.refused).toMatch(/outside the workspace/);
    }
  });

  it('inside the workspace: a preview, links that stay inside included; a dangling link inside is refused too', async () => {
    await mkdir(join(fx.home, 'sub'), { recursive: true });
    await writeFile(join(fx.home, 'sub', 'real.txt'), 'old');
    await symlink(join(fx.home, 'sub', 'real.txt'), join(fx.home, 'inside.txt'));
    await symlink('sub/missing.txt', join(fx.home, 'dangling.txt'));
    expect(await previews.reply(req('write_file', { path: 'inside.txt', content: 'new' }))).toEqual({
      preview: expect.objectContaining({ old_content: 'old', new_content: 'new' }),
    });
    expect(await previews.reply(req('write_file', { path: 'dangling.txt', content: 'new' }))).toEqual({
      preview: null,
      refused: '/workspace/dangling.txt leads through a symlink whose target does not exist',
    });
    expect(await previews.reply(req('write_file', { path: 'sub/brand-new.txt', content: 'new' }))).toEqual({
      preview: { path: '/workspace/sub/brand-new.txt', new_content: 'new' },
    });
  });
});
