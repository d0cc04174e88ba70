// Every request subject of libs/contracts is answered by the app its `queue` names: a subject
// declared and called but handled nowhere compiles, passes every unit test and, at run time, waits
// out the no-responder retries before it fails. The handlers are read from the apps' source: each
// `bus.handle('<subject>', …)` outside the specs.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUBJECTS, type RequestSubject } from '@skald/contracts';

const repoRoot = join(__dirname, '..', '..');
const NOT_SOURCE = /\.(spec|integration-spec|serial-spec)\.ts$|\.d\.ts$/;
const HANDLE = /\.handle\(\s*'([a-z0-9_.-]+)'/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'testing-fixtures' ? [] : sourceFiles(path);
    return e.name.endsWith('.ts') && !NOT_SOURCE.test(e.name) ? [path] : [];
  });
}

/** The subjects an app's source answers, read off its `handle` calls. */
function handledBy(texts: readonly string[]): Set<string> {
  return new Set(texts.flatMap((t) => [...t.matchAll(HANDLE)].map((m) => m[1])));
}

/** Declared subjects whose owner does not answer them, and answered subjects no one declared for it. */
function mismatches(
  declared: ReadonlyArray<[subject: string, owner: string]>,
  handled: Readonly<Record<string, Set<string>>>,
): { unanswered: string[]; stray: string[] } {
  const owned = new Set(declared.map(([s, o]) => `${o} ${s}`));
  return {
    unanswered: declared.filter(([s, o]) => !handled[o]?.has(s)).map(([s, o]) => `${s} (owner ${o})`),
    stray: Object.entries(handled).flatMap(([app, subjects]) =>
      [...subjects].filter((s) => !owned.has(`${app} ${s}`)).map((s) => `${s} (handled by ${app})`),
    ),
  };
}

describe('request subjects and their handlers', () => {
  const declared = (Object.keys(SUBJECTS) as RequestSubject[]).map((s) => [s, SUBJECTS[s].queue] as [string, string]);
  const apps = [...new Set(declared.map(([, owner]) => owner))];

  it('every subject is answered by the app its queue names, and by no other', () => {
    const handled = Object.fromEntries(
      apps.map((app) => [
        app,
        handledBy(sourceFiles(join(repoRoot, 'apps', app, 'src')).map((f) => readFileSync(f, 'utf8'))),
      ]),
    );

    expect(apps.length).toBeGreaterThanOrEqual(5);
    expect(mismatches(declared, handled)).toEqual({ unanswered: [], stray: [] });
  });

  it('names a subject its owner does not answer, and one answered by the wrong app', () => {
    const handled = { 'session-worker': handledBy([`this.bus.handle(\n  'session.get', (r) => r)`]) };

    expect(
      mismatches(
        [
          ['session.get', 'session-worker'],
          ['session.pin', 'session-worker'],
        ],
        { ...handled, gateway: handledBy([`bus.handle('session.get', f)`]) },
      ),
    ).toEqual({ unanswered: ['session.pin (owner session-worker)'], stray: ['session.get (handled by gateway)'] });
  });
});
