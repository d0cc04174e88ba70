import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import {
  APPROVAL_TOPICS,
  DIRECT_SUBJECTS,
  directSubject,
  routeOf,
  NATS_GRANTS,
  natsPermissions,
  RequestSubject,
  SKALD_SERVICES,
  SkaldService,
  SUBJECTS,
  TOPICS,
} from '@skald/contracts';

const ROOT = path.resolve(__dirname, '../..');
const ALL_TOPICS: Record<string, { pattern: string }> = { ...TOPICS, ...APPROVAL_TOPICS };

function sources(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) return e.name === 'testing-fixtures' ? [] : [sources(p)];
      return /\.ts$/.test(e.name) && !/spec\.ts$/.test(e.name) ? [readFileSync(p, 'utf8')] : [];
    })
    .join('\n');
}

/** What each app's code sends and listens to, read off its source. */
function usedBy(service: SkaldService) {
  const src = sources(path.join(ROOT, 'apps', service, 'src'));
  const subjects = (Object.keys(SUBJECTS) as RequestSubject[]).filter((s) => src.includes(`'${s}'`));
  const topics = (verb: 'publish' | 'subscribe') =>
    [...src.matchAll(new RegExp(`\\.${verb}\\(\\s*(?:APPROVAL_)?TOPICS\\.(\\w+)\\.`, 'g'))].map(
      (m) => ALL_TOPICS[m[1]].pattern,
    );
  return {
    handled: subjects.filter((s) => SUBJECTS[s].queue === service),
    called: subjects.filter((s) => SUBJECTS[s].queue !== service),
    published: topics('publish'),
    subscribed: topics('subscribe'),
  };
}

/** NATS subject matching (`*` one token, `>` the rest). */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i] && !(s[i] === '*' && p[i] === '*'))) return false;
  }
  return p.length === s.length;
}

describe('NATS grants (contracts/access.ts) against what each app does', () => {
  describe.each(SKALD_SERVICES)('%s', (service) => {
    const used = usedBy(service);
    const perms = natsPermissions(service);

    it('may send every request its code sends, and no request its code never sends', () => {
      expect([...used.called].sort()).toEqual([...NATS_GRANTS[service].calls].sort());
    });

    it('may answer exactly the requests of its queue, and answers each of them', () => {
      const own = (Object.keys(SUBJECTS) as RequestSubject[]).filter((s) => SUBJECTS[s].queue === service);
      expect([...used.handled].sort()).toEqual([...own].sort());
      for (const s of own) expect(perms.subscribe).toContain(s);
    });

    it('may publish and subscribe to every topic its code uses', () => {
      for (const t of used.published) expect(perms.publish.some((p) => matches(p, t))).toBe(true);
      for (const t of used.subscribed) expect(perms.subscribe.some((p) => matches(p, t))).toBe(true);
    });

    it('receives replies only on its own inbox', () => {
      const inboxes = perms.subscribe.filter((s) => s.startsWith('_INBOX'));
      expect(inboxes).toEqual([`_INBOX.${service}.>`]);
      expect(perms.publish.some((p) => p.startsWith('_INBOX') || p === '>')).toBe(false);
    });
  });

  it('lets only the gateway announce and hear credential revocations (every replica re-checks its sockets)', () => {
    const subject = TOPICS.userRevoked.subject();
    const grants = (verb: 'publish' | 'subscribe') =>
      SKALD_SERVICES.filter((s) => natsPermissions(s)[verb].some((p) => matches(p, subject)));
    expect(grants('publish')).toEqual(['gateway']);
    expect(grants('subscribe')).toEqual(['gateway']);
    // that it reaches every replica (no queue group): test/e2e/credentials.e2e-spec.ts, sockets on both close
  });

  it('lets only the session worker run tools', () => {
    const runs = SKALD_SERVICES.filter((s) => natsPermissions(s).publish.includes('tools.exec'));
    expect(runs).toEqual(['session-worker']);
  });

  it("lets only the gateway send to a worker's own submit subject, and only session workers answer it (carry affinity)", () => {
    expect(DIRECT_SUBJECTS).toEqual(['session.submit']);
    fc.assert(
      fc.property(fc.string(), fc.stringMatching(/^[0-9a-f]{8}$/), (instance, random) => {
        // whatever SKALD_INSTANCE a worker is given, its route is one token of its own subject
        const subject = directSubject('session.submit', routeOf(instance, random));
        expect(subject.split('.')).toHaveLength(3);
        const grants = (verb: 'publish' | 'subscribe') =>
          SKALD_SERVICES.filter((s) => natsPermissions(s)[verb].some((p) => matches(p, subject)));
        expect(grants('publish')).toEqual(['gateway']);
        // per service, not per instance: every worker may subscribe to every worker's route (docs/architecture.md)
        expect(grants('subscribe')).toEqual(['session-worker']);
      }),
    );
    expect(() => directSubject('session.submit', 'a.b')).toThrow();
    expect(() => directSubject('session.submit', '*')).toThrow();
    expect(() => directSubject('session.submit', '')).toThrow();
  });
});
