import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const watch = require(path.join(__dirname, '../../scripts/lib-watch.js')) as {
  CYCLE_END: RegExp;
  runtimeClosure(pkg: string): Set<string>;
  changedPackages(before: Map<string, number>, after: Map<string, number>): string[];
};

describe('npm run dev: which apps a rebuild restarts (scripts/lib-watch.js)', () => {
  it("restarts an app for its own code and its workspace libraries' code, not for another app's", () => {
    const gateway = watch.runtimeClosure('@skald/gateway');
    expect(gateway).toContain('@skald/gateway');
    expect(gateway).toContain('@skald/contracts');
    expect(gateway).toContain('@skald/persistence');
    expect(gateway).not.toContain('@skald/session-worker');
    // The web client's files are read per request: a Vite rebuild restarts nothing.
    expect(gateway).not.toContain('@skald/web');
    expect(watch.runtimeClosure('@skald/scheduler')).not.toContain('@skald/gateway');
  });

  it('sees a package as changed when its newest output is newer, and only then', () => {
    const before = new Map([
      ['@skald/a', 10],
      ['@skald/b', 10],
    ]);
    const after = new Map([
      ['@skald/a', 10],
      ['@skald/b', 11],
      ['@skald/c', 5],
    ]);
    expect(watch.changedPackages(before, after)).toEqual(['@skald/b', '@skald/c']);
    expect(watch.changedPackages(after, after)).toEqual([]);
  });

  it("recognises the end of tsc's watch compilation, with or without errors", () => {
    expect(watch.CYCLE_END.test('4:24:24 AM - Found 0 errors. Watching for file changes.')).toBe(true);
    expect(watch.CYCLE_END.test('4:24:24 AM - Found 1 error. Watching for file changes.')).toBe(true);
    expect(watch.CYCLE_END.test('4:24:24 AM - Starting compilation in watch mode...')).toBe(false);
  });
});
