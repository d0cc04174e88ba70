// docs/architecture.md draws the session worker's parts in one picture (the text block under "The
// session worker's parts"), naming each folder of apps/session-worker/src with a trailing `/`. The
// picture and the folders must agree: a folder added, moved or removed changes the picture too.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'apps/session-worker/src');
const HEADING = "## The session worker's parts";

/** The picture: the first ```text block after the heading. */
function picture(markdown: string): string {
  const at = markdown.indexOf(HEADING);
  if (at < 0) throw new Error(`no "${HEADING}" section`);
  const block = /```text\n([\s\S]*?)\n```/.exec(markdown.slice(at));
  if (!block) throw new Error(`no text block under "${HEADING}"`);
  return block[1];
}

/** The folders a picture names: words (with `/` between them) written with a trailing `/`. */
function namedFolders(text: string): string[] {
  const names = [...text.matchAll(/(?<![\w./-])([a-z][a-z0-9-]*(?:\/[a-z][a-z0-9-]*)*)\/(?![\w-])/g)].map((m) => m[1]);
  return [...new Set(names)].sort();
}

/** The folders under `dir` that hold a file (at any depth), relative to `dir`. */
function folders(dir: string, rel = ''): string[] {
  return readdirSync(path.join(dir, rel), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => {
      const sub = rel ? `${rel}/${e.name}` : e.name;
      const below = folders(dir, sub);
      return hasFile(path.join(dir, sub)) ? [sub, ...below] : below;
    })
    .sort();
}

function hasFile(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some(
    (e) => e.isFile() || (e.isDirectory() && hasFile(path.join(dir, e.name))),
  );
}

/** What the picture misses and what it names that is not there. */
function disagreement(named: readonly string[], existing: readonly string[]) {
  return {
    notInPicture: existing.filter((f) => !named.includes(f)),
    notOnDisk: named.filter((f) => !existing.includes(f)),
  };
}

describe("docs/architecture.md: the session worker's parts", () => {
  const named = namedFolders(picture(readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8')));
  const existing = folders(SRC);

  it('reads the folders of the worker, nested ones included', () => {
    expect(existing).toContain('turns');
    expect(existing).toContain('loop-adapters/session-store');
  });

  it('names every folder of apps/session-worker/src, and only those', () => {
    expect(disagreement(named, existing)).toEqual({ notInPicture: [], notOnDisk: [] });
  });
});

describe('the picture check', () => {
  it('takes the names written with a trailing slash, not paths or subjects', () => {
    const text =
      'gateway ──▶ sessions/  (libs/agent-loop, session.<id>.wake, /compact)\n ├─ loop-adapters/session-store/ ──▶ llm/';
    expect(namedFolders(text)).toEqual(['llm', 'loop-adapters/session-store', 'sessions']);
  });

  it('reports a folder missing from the picture and a folder that is gone', () => {
    expect(disagreement(['submit', 'store'], ['submit', 'turns'])).toEqual({
      notInPicture: ['turns'],
      notOnDisk: ['store'],
    });
  });

  it('fails without the section or its text block', () => {
    expect(() => picture('# Other\n')).toThrow(/no "## The session worker's parts" section/);
    expect(() => picture(`${HEADING}\n\nno picture\n`)).toThrow(/no text block/);
  });
});
