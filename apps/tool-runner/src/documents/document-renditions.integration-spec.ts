import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FILE_CHUNK_BYTES } from '@skald/contracts';
import { DocumentExtractor } from '@skald/documents';
import { makeDocx, makePdf, makePptx, makeXlsx } from '@skald/documents/testing';
import { FileToolsService } from '../files/file-tools.service';
import { parseArgs, DeleteFileArgs, ReadFileArgs, SearchFileArgs } from '../files/file-tool-args';
import { PatternPool } from '../patterns/pattern-pool';
import { tp, workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { WorkspaceFilesService } from '../uploads/workspace-files.service';
import { until } from '@skald/testing/until';
import { DocumentRenditions } from './document-renditions.service';

// What the model reads of an uploaded document, through the real tool services and a real workspace.
describe('document renditions (read_file of documents)', () => {
  let fx: WorkspaceFixture;
  let files: FileToolsService;
  let uploads: WorkspaceFilesService;
  let patterns: PatternPool;
  const extractor = new DocumentExtractor();
  beforeEach(async () => {
    fx = await workspaceFixture();
    patterns = new PatternPool();
    const docs = new DocumentRenditions(fx.workspaces, extractor);
    files = new FileToolsService(fx.workspaces, patterns, docs);
    uploads = new WorkspaceFilesService(
      fx.workspaces,
      { root: join(fx.base, 'ws'), quota: 1024 ** 3 },
      { sweepMs: 0 },
      docs,
    );
  });
  afterEach(async () => {
    await patterns.onModuleDestroy();
    await fx.cleanup();
  });

  const read = async (path: string, extra: Record<string, unknown> = {}) =>
    (await files.readFile(fx.ctx(), parseArgs('read_file', ReadFileArgs, { path, ...extra }))).result;
  const failure = async (p: Promise<unknown>): Promise<ToolError> => {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    if (!(e instanceof ToolError)) throw new Error(`expected a ToolError, got ${String(e)}`);
    return e;
  };
  const upload = async (name: string, bytes: Buffer) => {
    const uploadId = randomUUID();
    let offset = 0;
    for (;;) {
      const part = bytes.subarray(offset, offset + FILE_CHUNK_BYTES);
      const last = offset + part.length >= bytes.length;
      const r = await uploads.upload({
        actor: { userId: fx.userId, role: 'user' },
        upload_id: uploadId,
        name,
        mimetype: 'application/octet-stream',
        offset,
        last,
        data: part.toString('base64'),
      });
      offset += part.length;
      if (last) {
        if (!r.attachment) throw new Error('the last chunk stored no file');
        return r.attachment;
      }
    }
  };

  it('an uploaded PDF gets a text rendition beside it, counted in the quota, which read_file gives with page markers', async () => {
    const a = await upload('report.pdf', await makePdf([['Revenue grew 12%'], ['Appendix']]));
    expect(a.path).toBe('/workspace/uploads/report.pdf');
    const host = join(fx.home, 'uploads/.skald-text/report.pdf.txt');
    await until('the rendition of the upload', async () => (await stat(host).catch(() => null)) !== null, 30_000);
    const before = await fx.workspaces.used(fx.userId, await fx.workspaces.jail(fx.userId));
    const out = await read('/workspace/uploads/report.pdf');
    expect(out).toContain(
      '[text of the PDF /workspace/uploads/report.pdf, 2 pages, extracted by Skald; the file itself is binary]',
    );
    expect(out).toMatch(/--- page 1 of 2 ---\n\s+\d+\tRevenue grew 12%\n\s+\d+\t--- page 2 of 2 ---/);
    expect(before.bytes).toBeGreaterThanOrEqual((await stat(host)).size + a.filesize);
    // search_file reads the same text.
    const found = await files.searchFile(
      fx.ctx(),
      parseArgs('search_file', SearchFileArgs, { path: '/workspace/uploads/report.pdf', query: 'appendix' }),
    );
    expect(found.result).toContain('1 match for "appendix"');
  }, 60_000);

  it('reads DOCX, XLSX and PPTX with their markers, and a document overwritten since is read anew', async () => {
    await mkdir(join(fx.home, 'docs'));
    await writeFile(join(fx.home, 'docs/a.docx'), await makeDocx(['First draft']));
    expect(await read('docs/a.docx')).toContain('First draft');
    await writeFile(join(fx.home, 'docs/a.docx'), await makeDocx(['Second draft, longer than the first']));
    const second = await read('docs/a.docx');
    expect(second).toContain('Second draft');
    expect(second).not.toContain('First draft');
    await writeFile(join(fx.home, 'docs/b.xlsx'), await makeXlsx({ Q1: [['north', 3]] }));
    expect(await read('docs/b.xlsx')).toMatch(/--- sheet 1 of 1: Q1 ---\n\s+\d+\trow 1: north \| 3/);
    await writeFile(join(fx.home, 'docs/c.pptx'), await makePptx([['Hello deck']]));
    expect(await read('docs/c.pptx')).toMatch(/--- slide 1 of 1 ---\n\s+\d+\tHello deck/);
  }, 60_000);

  it('a corrupt document says why it cannot be read; delete_file takes its rendition along', async () => {
    await writeFile(join(fx.home, 'broken.pdf'), Buffer.from('%PDF-1.4 garbage'));
    const e = await failure(read('broken.pdf'));
    expect(e.message).toMatch(
      /^read_file: \/workspace\/broken.pdf is a PDF whose text cannot be read: it is not a readable PDF/,
    );
    const rendition = join(fx.home, '.skald-text/broken.pdf.txt');
    expect((await readFile(rendition, 'utf8')).startsWith('#skald-text-rendition ')).toBe(true);
    await files.deleteFile(fx.ctx(), parseArgs('delete_file', DeleteFileArgs, { path: tp('broken.pdf') }));
    expect(await stat(rendition).catch(() => null)).toBeNull();
  }, 60_000);

  it('a CSV or HTML file of the agent’s own (not uploaded) is read as its source, to be edited', async () => {
    await writeFile(join(fx.home, 'table.csv'), 'a,b\n1,2\n');
    await writeFile(join(fx.home, 'page.html'), '<p class="x">Hi</p>\n');
    expect(await read('table.csv')).toContain('a,b');
    expect(await read('table.csv')).not.toContain('row 2');
    expect(await read('page.html')).toContain('<p class="x">Hi</p>');
    await mkdir(join(fx.home, 'uploads'), { recursive: true });
    await writeFile(join(fx.home, 'uploads/page.html'), '<p class="x">Hi</p>\n');
    expect(await read('uploads/page.html')).not.toContain('<p');
  }, 60_000);

  it('a document replaced outside the tools (a command) is never answered from the old text', async () => {
    await mkdir(join(fx.home, 'uploads'), { recursive: true });
    await writeFile(join(fx.home, 'uploads/p.csv'), 'a,b\n1,2\n');
    expect(await read('uploads/p.csv')).toContain('row 2: 1 | 2');
    await rm(join(fx.home, 'uploads/p.csv'));
    await writeFile(join(fx.home, 'uploads/p.csv'), 'a,b\n7,8\n');
    const again = await read('uploads/p.csv');
    expect(again).toContain('row 2: 7 | 8');
    expect(again).not.toContain('row 2: 1 | 2');
  }, 60_000);
  it('with no room in the quota, or a .skald-text symlink leading out, the text is answered and nothing is written', async () => {
    const csv = 'name,total\nnorth,3\n';
    const small = await workspaceFixture({ quota: csv.length + 8 });
    const pool = new PatternPool();
    try {
      const tools = new FileToolsService(small.workspaces, pool, new DocumentRenditions(small.workspaces, extractor));
      await mkdir(join(small.home, 'uploads'), { recursive: true });
      await writeFile(join(small.home, 'uploads/q.csv'), csv);
      const out = await tools.readFile(small.ctx(), parseArgs('read_file', ReadFileArgs, { path: 'uploads/q.csv' }));
      expect(out.result).toContain('row 2: north | 3');
      expect(await stat(join(small.home, 'uploads/.skald-text/q.csv.txt')).catch(() => null)).toBeNull();

      const outside = await mkdtemp(join(tmpdir(), 'skald-outside-'));
      await mkdir(join(fx.home, 'uploads'), { recursive: true });
      await rm(join(fx.home, 'uploads/.skald-text'), { recursive: true, force: true });
      await symlink(outside, join(fx.home, 'uploads/.skald-text'));
      await writeFile(join(fx.home, 'uploads/r.csv'), csv);
      expect(await read('uploads/r.csv')).toContain('row 2: north | 3');
      expect(await readdir(outside)).toEqual([]);
      await rm(outside, { recursive: true });
    } finally {
      await pool.onModuleDestroy();
      await small.cleanup();
    }
  }, 60_000);
});
