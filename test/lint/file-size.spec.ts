// A source file of an app stays under MAX_LINES lines, or says in its header why it is one piece:
// a long file usually holds several reasons to change, and a newcomer changing one of them has to
// read them all. A file that is one cohesive thing (a data table, a parser walk) states it with a
// header line `// Size: <the reason>` among the comments at its top.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const repoRoot = join(__dirname, '..', '..');

const MAX_LINES = 450;

/** Test and build output: not the apps' source. */
const NOT_SOURCE = /\.(spec|integration-spec|serial-spec)\.tsx?$|\.d\.ts$/;

/** The lines of `text` (a last line without a newline counts). */
function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** The comment lines at the top of `text`, before its first line of code. */
function header(text: string): string[] {
  const lines: string[] = [];
  let inBlock = false;
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (inBlock) {
      lines.push(t);
      if (t.includes('*/')) inBlock = false;
    } else if (t === '' || t.startsWith('//')) lines.push(t);
    else if (t.startsWith('/*')) {
      lines.push(t);
      inBlock = !t.includes('*/');
    } else break;
  }
  return lines;
}

/** `// Size: <reason>` in the header, with a reason. */
const SIZE_REASON = /^\/\/ Size: \S/;

/** Why `file` breaks the rule (its length and no stated reason), or null. */
function oversized(file: string, text: string): string | null {
  const lines = lineCount(text);
  if (lines <= MAX_LINES) return null;
  if (header(text).some((l) => SIZE_REASON.test(l))) return null;
  return `${file}: ${lines} lines (over ${MAX_LINES}) and no \`// Size: <reason>\` line in its header`;
}

/** Every app source file (.ts, .tsx; no specs) under `dir`. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'dist' ? [] : sourceFiles(path);
    return e.isFile() && /\.tsx?$/.test(e.name) && !NOT_SOURCE.test(e.name) ? [path] : [];
  });
}

function appSources(): string[] {
  const apps = join(repoRoot, 'apps');
  return readdirSync(apps, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => {
      const src = join(apps, e.name, 'src');
      try {
        return sourceFiles(src);
      } catch {
        return [];
      }
    })
    .map((f) => relative(repoRoot, f))
    .sort();
}

describe('the size of app source files', () => {
  const files = appSources();

  it('covers every app source file and no spec', () => {
    expect(files).toContain('apps/session-worker/src/turns/turn-driver.ts');
    expect(files).toContain('apps/web/src/main.tsx');
    expect(files.filter((f) => NOT_SOURCE.test(f))).toEqual([]);
  });

  it(`keeps each under ${MAX_LINES} lines or states why in its header`, () => {
    const found = files.map((f) => oversized(f, readFileSync(join(repoRoot, f), 'utf8'))).filter((v) => v !== null);
    expect(found).toEqual([]);
  });
});

describe('the size check', () => {
  const code = (n: number): string => Array.from({ length: n }, (_, i) => `export const c${i} = ${i};\n`).join('');

  it('passes a file of at most MAX_LINES lines', () => {
    expect(oversized('a.ts', code(MAX_LINES))).toBeNull();
  });

  it('fails a longer file without a stated reason', () => {
    expect(oversized('a.ts', code(MAX_LINES + 1))).toBe(
      `a.ts: ${MAX_LINES + 1} lines (over ${MAX_LINES}) and no \`// Size: <reason>\` line in its header`,
    );
  });

  it('passes a longer file whose header states the reason', () => {
    const text = `// The program table.\n//\n// Size: one row per program; split by nothing but the alphabet.\n${code(MAX_LINES)}`;
    expect(oversized('a.ts', text)).toBeNull();
    expect(
      oversized('a.ts', `/**\n * A parser.\n */\n// Size: one walk over the tree.\n${code(MAX_LINES)}`),
    ).toBeNull();
  });

  it('fails a reason that is empty or not in the header', () => {
    expect(oversized('a.ts', `// Size:\n${code(MAX_LINES)}`)).not.toBeNull();
    expect(oversized('a.ts', `${code(10)}// Size: below the code\n${code(MAX_LINES)}`)).not.toBeNull();
  });
});
