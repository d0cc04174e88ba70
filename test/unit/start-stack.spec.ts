import fc from 'fast-check';
import path from 'node:path';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

// eslint-disable-next-line @typescript-eslint/no-require-imports
const stack = require(path.join(__dirname, '../../scripts/lib-stack.js')) as {
  urlProblems(env: Record<string, string | undefined>): string[];
  passwordHint(url: string): string;
  ensureBinaries(
    names: string[],
    o: { env?: NodeJS.ProcessEnv; say: (m: string) => void; find?: (n: string) => string | null; root?: boolean },
  ): void;
};

describe('npm start: the URLs it is given (scripts/lib-stack.js)', () => {
  const hostile = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.webUrl(),
    fc.constantFrom('postgres://', 'postgres://:0/x', 'redis://[::1', 'nats://a:99999', '::', '\u0000', 'http://x'),
    fc
      .tuple(fc.constantFrom('postgres://', 'redis://', 'nats://'), fc.string({ maxLength: 60 }))
      .map(([a, b]) => a + b),
  );

  it(`names each bad DATABASE_URL / REDIS_URL / NATS_URL and never throws (seed ${SEED})`, () => {
    fc.assert(
      fc.property(hostile, hostile, hostile, (DATABASE_URL, REDIS_URL, NATS_URL) => {
        const problems = stack.urlProblems({ DATABASE_URL, REDIS_URL, NATS_URL });
        for (const p of problems) expect(p).toMatch(/^(DATABASE_URL|REDIS_URL|NATS_URL) /);
        // A problem-free URL is one the start command can use: parsed, with a host.
        for (const [name, raw] of Object.entries({ DATABASE_URL, REDIS_URL, NATS_URL })) {
          if (raw === '' || problems.some((p) => p.startsWith(name))) continue;
          expect(new URL(raw).hostname).not.toBe('');
        }
      }),
      { seed: SEED, numRuns: 3000 },
    );
    expect(
      stack.urlProblems({
        DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/skald',
        REDIS_URL: 'redis://127.0.0.1:6379',
        NATS_URL: 'nats://127.0.0.1:4222',
      }),
    ).toEqual([]);
    expect(stack.passwordHint('postgres://%E0%A4%A@127.0.0.1/skald')).toContain('"%E0%A4%A"');
    expect(stack.urlProblems({ DATABASE_URL: 'mysql://x/y' })).toEqual([
      'DATABASE_URL must start with postgres:// or postgresql://',
    ]);
  });

  it(`never prints the password of a refused DATABASE_URL (seed ${SEED})`, () => {
    const password = fc.string({ minLength: 6, maxLength: 30 }).filter((p) => /[A-Za-z0-9]{6}/.test(p));
    fc.assert(
      fc.property(password, (pw) => {
        const url = `postgres://postgres:${encodeURIComponent(pw)}@127.0.0.1:5432/skald`;
        const hint = stack.passwordHint(url);
        expect(hint).not.toContain(pw);
        expect(hint).not.toContain(encodeURIComponent(pw));
        expect(hint).toContain('DATABASE_URL=postgres://postgres:<password>@127.0.0.1:5432/skald');
      }),
      { seed: SEED, numRuns: 1000 },
    );
    // Any user name the URL carries, malformed escapes included: a hint, never a crash.
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (user) => {
        const url = `postgres://${user.replace(/[@/:?#[\]]/g, '')}@127.0.0.1/skald`;
        if (stack.urlProblems({ DATABASE_URL: url }).length > 0) return;
        expect(stack.passwordHint(url)).toContain('PostgreSQL at 127.0.0.1:5432 refused');
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });
});

describe('npm start: the binaries of the private Redis and NATS', () => {
  const say = jest.fn();
  const none = () => null;

  it('prints the one command that installs what is missing when it may not install (not root)', () => {
    expect(() => stack.ensureBinaries(['redis-server', 'nats-server'], { say, find: none, root: false })).toThrow(
      'Install with:\n    sudo apt-get install -y redis-server nats-server',
    );
    expect(say).not.toHaveBeenCalled();
  });

  it('does the same as root on a machine without apt-get, and nothing when all are there', () => {
    expect(() => stack.ensureBinaries(['nats-server'], { say, find: none, root: true })).toThrow(
      'sudo apt-get install -y nats-server',
    );
    expect(() =>
      stack.ensureBinaries(['nats-server'], { say, find: (n) => `/usr/sbin/${n}`, root: false }),
    ).not.toThrow();
    expect(say).not.toHaveBeenCalled();
  });
});
