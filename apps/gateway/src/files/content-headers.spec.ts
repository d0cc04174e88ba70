import fc from 'fast-check';
import { contentDisposition, fileHeaders } from './content-headers';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

describe('fileHeaders', () => {
  it.each([
    ['page.html', 'text/html; charset=utf-8', 'attachment'],
    ['logo.svg', 'image/svg+xml', 'attachment'],
    ['feed.xml', 'application/xml', 'attachment'],
    ['app.js', 'application/javascript', 'attachment'],
    ['run', 'application/octet-stream', 'attachment'],
    ['notes.txt', 'text/plain; charset=utf-8', 'inline'],
    ['photo.PNG', 'image/png', 'inline'],
    ['doc.pdf', 'application/pdf', 'inline'],
  ])('%s → %s, %s', (name, type, disposition) => {
    const h = fileHeaders(name, 10);
    expect(h['Content-Type']).toBe(type);
    expect(h['Content-Disposition'].split(';')[0]).toBe(disposition);
    expect(h['X-Content-Type-Options']).toBe('nosniff');
    expect(h['Content-Security-Policy']).toMatch(/^sandbox; default-src 'none'/);
    expect(h['Content-Length']).toBe('10');
  });

  it('a name never breaks out of Content-Disposition and never throws', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (name) => {
        const v = contentDisposition('attachment', name);
        // a header value: no CR/LF, no unescaped quote in the quoted name, ASCII only
        expect(v).toMatch(/^attachment; filename="[\x20-\x7e]*"; filename\*=UTF-8''[A-Za-z0-9%\-._~]*$/);
        const quoted = /filename="([^"]*)"/.exec(v)?.[1] ?? '';
        expect(quoted).not.toMatch(/["\\]/);
      }),
      { seed, numRuns: 2000 },
    );
    expect(contentDisposition('attachment', '\ud800x')).toContain("filename*=UTF-8''%EF%BF%BDx");
  });
});
