import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { ABSENT_FILE_HASH } from '@skald/contracts';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import { PlainCommandRunner } from '../command/plain-command.runner';
import { contentHash } from '../files/content-hash';
import { PreviewService } from '../preview/preview.service';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolExecRequest, ToolExecService } from './tool-exec.service';
import { ToolMetrics } from './tool-metrics';
import { ToolRouter } from './tool-router';

/** `expected_base_hash` — a write approved on a preview of another version writes nothing. */
describe('tools.exec with expected_base_hash', () => {
  let fx: WorkspaceFixture;
  let runner: PlainCommandRunner;
  let tools: ToolExecService;
  let previews: PreviewService;
  const log = pino({ level: 'silent' });

  beforeEach(async () => {
    fx = await workspaceFixture();
    runner = new PlainCommandRunner();
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, log);
    tools = new ToolExecService(new ToolRouter(fx.files, commands), new ToolMetrics(), runner, log);
    previews = new PreviewService(fx.workspaces);
  });
  afterEach(async () => {
    runner.onApplicationShutdown();
    await fx.cleanup();
  });

  const request = (name: string, args: Record<string, unknown>, toolCallId = randomUUID()): ToolExecRequest => ({
    actor: { userId: fx.userId, role: 'user' },
    session_id: randomUUID(),
    tool_call_id: toolCallId,
    name,
    arguments: args,
  });
  /** What the session worker sends: the preview's hash, or the absent-file hash for a new file. */
  const previewHash = async (req: ToolExecRequest): Promise<{ hash: string; newContent: string }> => {
    const p = await previews.preview(req);
    if (!p) throw new Error('no preview');
    return { hash: p.base_hash ?? ABSENT_FILE_HASH, newContent: p.new_content };
  };
  const onDisk = (name: string): Promise<string> => readFile(join(fx.home, name), 'utf8');

  const cases: Array<[string, Record<string, unknown>]> = [
    ['write_file', { path: 'f.txt', content: 'replaced\n' }],
    ['edit_file', { path: 'f.txt', old: 'two', new: 'TWO' }],
    ['insert_at_line', { path: 'f.txt', line: 1, content: 'zero', position: 'before' }],
    ['replace_lines', { path: 'f.txt', from_line: 2, to_line: 2, new: 'deux' }],
    ['append_file', { path: 'f.txt', content: 'three\n' }],
  ];

  it.each(cases)(
    '%s: a concurrent edit after the preview → stale, nothing written; the same call with a fresh hash writes the fresh preview',
    async (name, args) => {
      await writeFile(join(fx.home, 'f.txt'), 'one\ntwo\n');
      const req = request(name, args);
      const first = await previewHash(req);
      expect(first.hash).toBe(contentHash('one\ntwo\n'));
      await writeFile(join(fx.home, 'f.txt'), 'one\ntwo\nby hand\n');

      const stale = await tools.exec({ ...req, expected_base_hash: first.hash });
      expect(stale).toEqual({ status: 'stale', error: expect.stringContaining('/workspace/f.txt changed') });
      expect(await onDisk('f.txt')).toBe('one\ntwo\nby hand\n');

      // Re-approved on a fresh preview: the same tool call id runs (the stale answer is not kept).
      const fresh = await previewHash(req);
      expect(await tools.exec({ ...req, expected_base_hash: fresh.hash })).toMatchObject({ status: 'done' });
      expect(await onDisk('f.txt')).toBe(fresh.newContent);
    },
  );

  it('without expected_base_hash nothing is checked', async () => {
    await writeFile(join(fx.home, 'f.txt'), 'a');
    expect(await tools.exec(request('append_file', { path: 'f.txt', content: 'b' }))).toMatchObject({ status: 'done' });
    expect(await onDisk('f.txt')).toBe('a\nb');
  });

  it('a new file: the absent-file hash holds while the file is missing, and is stale once someone created it', async () => {
    const req = request('write_file', { path: 'sub/new.txt', content: 'mine' });
    const { hash } = await previewHash(req);
    expect(hash).toBe(ABSENT_FILE_HASH);
    const created = request('write_file', { path: 'sub/other.txt', content: 'x' });
    expect(await tools.exec({ ...created, expected_base_hash: hash })).toMatchObject({ status: 'done' });

    await tools.exec(request('write_file', { path: 'sub/new.txt', content: 'theirs' }));
    expect(await tools.exec({ ...req, expected_base_hash: hash })).toMatchObject({ status: 'stale' });
    expect(await onDisk('sub/new.txt')).toBe('theirs');
    // append_file on a missing file: stale once it exists, even when empty.
    const app = request('append_file', { path: 'empty.txt', content: 'x' });
    const appHash = (await previewHash(app)).hash;
    await writeFile(join(fx.home, 'empty.txt'), '');
    expect(await tools.exec({ ...app, expected_base_hash: appHash })).toMatchObject({ status: 'stale' });
    expect(await onDisk('empty.txt')).toBe('');
  });

  it('a file deleted since the preview is stale, not "not found"', async () => {
    await writeFile(join(fx.home, 'gone.txt'), 'one\n');
    const req = request('edit_file', { path: 'gone.txt', old: 'one', new: 'uno' });
    const { hash } = await previewHash(req);
    await rm(join(fx.home, 'gone.txt'));
    expect(await tools.exec({ ...req, expected_base_hash: hash })).toMatchObject({ status: 'stale' });
    await expect(onDisk('gone.txt')).rejects.toThrow(/ENOENT/);
  });

  it('an unchanged file is written exactly as previewed', async () => {
    await writeFile(join(fx.home, 'same.txt'), 'x\r\ny\r\n');
    const req = request('edit_file', { path: 'same.txt', old: 'y\n', new: 'Y\n' });
    const { hash, newContent } = await previewHash(req);
    expect(await tools.exec({ ...req, expected_base_hash: hash })).toMatchObject({ status: 'done' });
    expect(await onDisk('same.txt')).toBe(newContent);
  });
});
