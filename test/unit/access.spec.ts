import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import {
  ANY_ID,
  DIRECT_SUBJECTS,
  directSubject,
  routeOf,
  NATS_GRANTS,
  natsPermissions,
  RequestSubject,
  SKALD_SERVICES,
  SkaldService,
  SUBJECTS,
  type TopicKey,
  topicOf,
  TOPICS,
} from '@skald/contracts';

const ROOT = path.resolve(__dirname, '../..');
const TOPIC_KEYS = Object.keys(TOPICS) as TopicKey[];

function sourceFiles(dir: string): { file: string; text: string }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'testing-fixtures' || e.name === 'dist' ? [] : sourceFiles(p);
    return /\.tsx?$/.test(e.name) && !/spec\.tsx?$/.test(e.name) ? [{ file: p, text: readFileSync(p, 'utf8') }] : [];
  });
}

function sources(dir: string): string {
  return sourceFiles(dir)
    .map((f) => f.text)
    .join('\n');
}

/** A bus call of a topic: `bus.publish('userRevoked', …)`, `bus.subscribe(topicOf('sessionWake', …), …)`. */
const BUS_TOPIC_CALL = (verb: string) => new RegExp(`\\bbus\\??\\.${verb}\\(\\s*(?:topicOf\\(\\s*)?'(\\w+)'`, 'g');
/** Every bus call of that verb, keyed or not. */
const BUS_CALL = (verb: string) => new RegExp(`\\bbus\\??\\.${verb}\\(`, 'g');

/** What each app's code sends and listens to, read off its source. */
function usedBy(service: SkaldService) {
  const src = sources(path.join(ROOT, 'apps', service, 'src'));
  const subjects = (Object.keys(SUBJECTS) as RequestSubject[]).filter((s) => src.includes(`'${s}'`));
  const topics = (...verbs: string[]): TopicKey[] => [
    ...new Set(verbs.flatMap((verb) => [...src.matchAll(BUS_TOPIC_CALL(verb))].map((m) => m[1] as TopicKey))),
  ];
  return {
    handled: subjects.filter((s) => SUBJECTS[s].queue === service),
    called: subjects.filter((s) => SUBJECTS[s].queue !== service),
    published: topics('publish'),
    subscribed: topics('subscribe', 'subscribeForwarded'),
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

    it('may publish and subscribe to exactly the topics its code uses', () => {
      expect([...used.published].sort()).toEqual([...NATS_GRANTS[service].publishes].sort());
      expect([...used.subscribed].sort()).toEqual([...NATS_GRANTS[service].subscribes].sort());
      for (const t of used.published) expect(perms.publish).toContain(TOPICS[t].pattern);
      for (const t of used.subscribed) expect(perms.subscribe).toContain(TOPICS[t].pattern);
    });

    it('receives replies only on its own inbox', () => {
      const inboxes = perms.subscribe.filter((s) => s.startsWith('_INBOX'));
      expect(inboxes).toEqual([`_INBOX.${service}.>`]);
      expect(perms.publish.some((p) => p.startsWith('_INBOX') || p === '>')).toBe(false);
    });
  });

  describe('the topic map (TOPICS) is complete', () => {
    const code = [
      ...SKALD_SERVICES.flatMap((s) => sourceFiles(path.join(ROOT, 'apps', s, 'src'))),
      ...sourceFiles(path.join(ROOT, 'libs')).filter((f) => !f.file.includes(`${path.sep}messaging${path.sep}`)),
    ];

    it('every publish and subscribe of a service names a topic of the map', () => {
      for (const { file, text } of code)
        for (const verb of ['publish', 'subscribe', 'subscribeForwarded']) {
          const keyed = [...text.matchAll(BUS_TOPIC_CALL(verb))].map((m) => m[1]);
          expect({ file, verb, calls: text.match(BUS_CALL(verb))?.length ?? 0 }).toEqual({
            file,
            verb,
            calls: keyed.length,
          });
          for (const k of keyed) expect(TOPIC_KEYS).toContain(k);
        }
    });

    it('no service reaches NATS around the map (raw connection, unkeyed publish)', () => {
      for (const { file, text } of code)
        expect({ file, raw: /\bnc\.(publish|subscribe)\(|\b(publish|subscribe)Unkeyed\(/.test(text) }).toEqual({
          file,
          raw: false,
        });
    });

    it('every topic is published by some service and heard by some service', () => {
      const published = new Set(SKALD_SERVICES.flatMap((s) => NATS_GRANTS[s].publishes));
      const heard = new Set(SKALD_SERVICES.flatMap((s) => NATS_GRANTS[s].subscribes));
      expect([...published].sort()).toEqual([...TOPIC_KEYS].sort());
      expect([...heard].sort()).toEqual([...TOPIC_KEYS].sort());
    });

    it("builds every topic's subjects inside its pattern, one id a token, and ANY_ID as the pattern's wildcard", () => {
      fc.assert(
        fc.property(fc.constantFrom(...TOPIC_KEYS), fc.array(fc.uuid(), { minLength: 2, maxLength: 2 }), (k, ids) => {
          const { pattern } = TOPICS[k];
          const arity = pattern.split('.').filter((t) => t === '*').length;
          const build = topicOf as (key: TopicKey, ...ids: string[]) => { topic: TopicKey; subject: string };
          const one = build(k, ...ids.slice(0, arity));
          expect(one.topic).toBe(k);
          expect(one.subject.split('.')).toHaveLength(pattern.split('.').length);
          expect(matches(pattern, one.subject)).toBe(true);
          expect(build(k, ...Array<string>(arity).fill(ANY_ID)).subject).toBe(pattern);
        }),
      );
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
