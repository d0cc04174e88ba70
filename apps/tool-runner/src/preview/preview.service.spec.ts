/**
 * PreviewService with a faked WorkspacesService over a directory under os.tmpdir(): the approval
 * card shows the file as it is and as the tool will write it, with the hash of what it was computed
 * from; a new file has no old side; nothing is shown for a tool that writes nothing, for arguments
 * the tool would reject, for an edit that would fail or for a binary file; a memory document is
 * previewed only where the memory tools are present. (Paths that leave the workspace:
 * preview-refusal.spec.ts.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fake, newTestService } from '@skald/testing/unit';
import { contentHash } from '../files/content-hash';
import { MemoryToolsService } from '../memory/memory-tools.service';
import { Jail } from '../workspace/jail';
import { WorkspacesService } from '../workspace/workspaces.service';
import { PreviewRequest, PreviewService } from './preview.service';

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'skald-preview-'));
  writeFileSync(join(home, 'notes.md'), 'one\ntwo\nthree\n');
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

function setUp(withMemory?: Partial<MemoryToolsService>) {
  const workspaces = { jail: jest.fn(() => Jail.at(home)) };
  const fakes = [fake(WorkspacesService, workspaces as unknown as WorkspacesService)];
  if (withMemory) fakes.push(fake(MemoryToolsService, withMemory));
  return { ...newTestService(PreviewService, fakes), workspaces };
}

const req = (name: string, args: Record<string, unknown>): PreviewRequest => ({
  actor: { userId: 'u1', role: 'user' },
  session_id: 's1',
  tool_call_id: 'c1',
  name,
  arguments: args,
});

describe('PreviewService', () => {
  it("shows an edit as the file's old and new content, with the hash it was computed from", async () => {
    const { sut, workspaces } = setUp();
    expect(await sut.preview(req('edit_file', { path: 'notes.md', old: 'two', new: 'TWO' }))).toEqual({
      path: '/workspace/notes.md',
      old_content: 'one\ntwo\nthree\n',
      new_content: 'one\nTWO\nthree\n',
      base_hash: contentHash('one\ntwo\nthree\n'),
    });
    expect(workspaces.jail).toHaveBeenCalledWith('u1');
  });

  it('shows line edits and appends with the same edit functions the tools apply', async () => {
    const { sut } = setUp();
    const lines = await sut.preview(req('replace_lines', { path: 'notes.md', from_line: 2, to_line: 3, new: 'end\n' }));
    expect(lines?.new_content).toBe('one\nend\n');
    const appended = await sut.preview(req('append_file', { path: 'notes.md', content: 'four\n' }));
    expect(appended?.new_content).toBe('one\ntwo\nthree\nfour\n');
  });

  it('shows a new file with no old side and no base hash, relative to the working directory', async () => {
    const { sut } = setUp();
    expect(
      await sut.preview(req('write_file', { path: 'draft.txt', content: 'hello', workdir: '/workspace/docs' })),
    ).toEqual({ path: '/workspace/docs/draft.txt', new_content: 'hello' });
  });

  it('shows nothing for a tool that writes no file, arguments the tool rejects, or an edit that would fail', async () => {
    const { sut } = setUp();
    expect(await sut.preview(req('read_file', { path: 'notes.md' }))).toBeNull();
    expect(await sut.preview(req('edit_file', { path: 'notes.md' }))).toBeNull();
    expect(await sut.preview(req('edit_file', { path: 'notes.md', old: 'absent', new: 'x' }))).toBeNull();
    expect(await sut.preview(req('edit_file', { path: 'missing.md', old: 'a', new: 'b' }))).toBeNull();
    expect(await sut.preview(req('delete_file', { path: 'notes.md' }))).toBeNull();
  });

  it('shows nothing for a binary file', async () => {
    writeFileSync(join(home, 'blob.bin'), Buffer.from([0, 1, 2, 0, 255]));
    const { sut } = setUp();
    expect(await sut.preview(req('append_file', { path: 'blob.bin', content: 'x' }))).toBeNull();
  });

  it('previews a memory document through the memory tools, and not without them', async () => {
    const doc = { path: { virtual: 'user-memory/prefs.md' }, content: 'tea\n' };
    const memory = { current: jest.fn().mockResolvedValue(doc), assertWritable: jest.fn() };
    const args = { path: 'user-memory/prefs.md', content: 'coffee\n' };
    expect(await setUp(memory as Partial<MemoryToolsService>).sut.preview(req('append_file', args))).toEqual({
      path: 'user-memory/prefs.md',
      old_content: 'tea\n',
      new_content: 'tea\ncoffee\n',
      base_hash: contentHash('tea\n'),
    });
    expect(memory.assertWritable).toHaveBeenCalled();
    expect(await setUp().sut.preview(req('append_file', args))).toBeNull();
  });
});
