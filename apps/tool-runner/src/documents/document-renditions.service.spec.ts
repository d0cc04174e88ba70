import { readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DocumentExtractor, DocumentKind, Extraction } from '@skald/documents';
import { DEFAULT_EXTRACTOR_OPTIONS } from '@skald/documents';
import { ToolCancelled } from '../exec/tool-context';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { resolveWorkspacePath, nonToolPath } from '../workspace/workspace-path';
import { DocumentRenditions, renditionPath } from './document-renditions.service';

/** An extractor that answers what the test says, counting its runs; `gate` holds a run until released. */
function fakeExtractor(answer: (bytes: Uint8Array) => Extraction, maxInputBytes = 1024) {
  const runs: string[] = [];
  let release: () => void = () => undefined;
  let gate: Promise<void> | null = null;
  const extractor = {
    options: { ...DEFAULT_EXTRACTOR_OPTIONS, maxInputBytes },
    sizeRefusal: (size: number): Extraction | null =>
      size > maxInputBytes ? { ok: false, reason: `it is larger than ${maxInputBytes} bytes` } : null,
    extract: async (kind: DocumentKind, bytes: Uint8Array): Promise<Extraction> => {
      runs.push(`${kind}:${Buffer.from(bytes).toString('utf8')}`);
      if (gate) await gate;
      return answer(bytes);
    },
  };
  return {
    extractor: extractor as unknown as DocumentExtractor,
    runs,
    hold: () => {
      gate = new Promise((r) => (release = r));
    },
    release: () => {
      gate = null;
      release();
    },
  };
}

const echo = (bytes: Uint8Array): Extraction => ({
  ok: true,
  text: `--- page 1 of 1 ---\n${Buffer.from(bytes).toString('utf8')}\n`,
  units: 1,
  truncated: false,
});

describe('DocumentRenditions', () => {
  let fx: WorkspaceFixture;
  beforeEach(async () => {
    fx = await workspaceFixture();
  });
  afterEach(() => fx.cleanup());
  const p = (path: string) => resolveWorkspacePath(nonToolPath(path));
  const signal = () => new AbortController().signal;

  it('extracts once, keeps the text beside the document and answers later reads from it', async () => {
    const fake = fakeExtractor(echo);
    const docs = new DocumentRenditions(fx.workspaces, fake.extractor);
    await writeFile(join(fx.home, 'a.pdf'), 'alpha');
    const first = await docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', signal());
    expect(first).toBe(
      '[text of the PDF /workspace/a.pdf, 1 page, extracted by Skald; the file itself is binary]\n--- page 1 of 1 ---\nalpha\n',
    );
    expect(await docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', signal())).toBe(first);
    expect(fake.runs).toEqual(['pdf:alpha']);
    expect(renditionPath(p('/workspace/a.pdf')).virtual).toBe('/workspace/.skald-text/a.pdf.txt');
    expect(await readFile(join(fx.home, '.skald-text/a.pdf.txt'), 'utf8')).toContain('\n' + first);
  });

  it('extracts again once the document changed, even to the same size and an old modification time', async () => {
    const fake = fakeExtractor(echo);
    const docs = new DocumentRenditions(fx.workspaces, fake.extractor);
    const host = join(fx.home, 'a.pdf');
    await writeFile(host, 'alpha');
    await docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', signal());
    await writeFile(host, 'omega');
    await utimes(host, new Date(2000, 0, 1), new Date(2000, 0, 1));
    expect(await docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', signal())).toContain('omega');
    expect(fake.runs).toEqual(['pdf:alpha', 'pdf:omega']);
  });

  it('reads at once share one extraction, and a cancelled read leaves it running for the rest', async () => {
    const fake = fakeExtractor(echo);
    const docs = new DocumentRenditions(fx.workspaces, fake.extractor);
    await writeFile(join(fx.home, 'a.pdf'), 'alpha');
    fake.hold();
    const stop = new AbortController();
    const cancelled = docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', stop.signal);
    const waiting = docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'search_file', signal());
    await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await expect(cancelled).rejects.toBeInstanceOf(ToolCancelled);
    fake.release();
    expect(await waiting).toContain('alpha');
    expect(fake.runs).toEqual(['pdf:alpha']);
  });

  it('a document that cannot be extracted says why, once: the reason is kept for its content', async () => {
    const fake = fakeExtractor(() => ({ ok: false, reason: 'it is encrypted (password-protected)' }));
    const docs = new DocumentRenditions(fx.workspaces, fake.extractor);
    await writeFile(join(fx.home, 'x.docx'), 'locked');
    for (let i = 0; i < 2; i++) {
      const e = await docs
        .text(fx.userId, p('/workspace/x.docx'), 'docx', 'read_file', signal())
        .catch((err: unknown) => err);
      expect(e).toBeInstanceOf(ToolError);
      expect((e as ToolError).message).toBe(
        'read_file: /workspace/x.docx is a Word document whose text cannot be read: it is encrypted (password-protected)',
      );
    }
    expect(fake.runs).toHaveLength(1);
  });

  it('a document over the size bound is refused without being read', async () => {
    const fake = fakeExtractor(echo, 4);
    const docs = new DocumentRenditions(fx.workspaces, fake.extractor);
    await writeFile(join(fx.home, 'big.html'), 'more than four bytes');
    await expect(docs.text(fx.userId, p('/workspace/big.html'), 'html', 'read_file', signal())).rejects.toThrow(
      'read_file: /workspace/big.html is an HTML page whose text cannot be read: it is larger than 4 bytes',
    );
    expect(fake.runs).toEqual([]);
  });

  it('a refusal that is not about the document (the reader busy) is not kept: the next read tries again', async () => {
    let busy = true;
    const fake = fakeExtractor((bytes) =>
      busy ? { ok: false, reason: 'the document reader is busy with other documents', transient: true } : echo(bytes),
    );
    const docs = new DocumentRenditions(fx.workspaces, fake.extractor);
    await writeFile(join(fx.home, 'a.pdf'), 'alpha');
    await expect(docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', signal())).rejects.toThrow(/busy/);
    busy = false;
    expect(await docs.text(fx.userId, p('/workspace/a.pdf'), 'pdf', 'read_file', signal())).toContain('alpha');
    expect(fake.runs).toEqual(['pdf:alpha', 'pdf:alpha']);
  });
});
