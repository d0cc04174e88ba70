import { DIRECT_SUBJECTS, directPattern, RequestSubject, SUBJECTS, TopicKey, TOPICS } from './subjects';

/**
 * What each service may do on NATS and Redis: the one source of truth that the NATS server
 * configuration (k8s/base/infra/nats.conf, which Compose mounts too; the test stack; `npm start`) and the Redis ACL users
 * are rendered from. Postgres roles have their own map in `@skald/persistence`.
 *
 * A service may answer the requests whose `queue` is its own (SUBJECTS), call the requests listed
 * in `calls`, publish and subscribe to the topics listed, and receive replies only on its own inbox
 * prefix (`_INBOX.<service>.`), so no service can read another's replies.
 */
export const SKALD_SERVICES = ['gateway', 'session-worker', 'approval-service', 'tool-runner', 'scheduler'] as const;
export type SkaldService = (typeof SKALD_SERVICES)[number];

interface NatsGrant {
  /** Requests the service sends (answered by another service). */
  calls: readonly RequestSubject[];
  /** Topics it publishes (granted by their pattern: every instance of the topic). */
  publishes: readonly TopicKey[];
  /** Topics it subscribes to (by their pattern). */
  subscribes: readonly TopicKey[];
}

const requestsOf = (service: SkaldService): RequestSubject[] =>
  (Object.keys(SUBJECTS) as RequestSubject[]).filter((s) => SUBJECTS[s].queue === service);

export const NATS_GRANTS: Record<SkaldService, NatsGrant> = {
  gateway: {
    calls: [
      ...requestsOf('scheduler').filter((s) => s !== 'tasks.submit_async' && s !== 'notify.event'),
      ...requestsOf('session-worker').filter((s) => !s.startsWith('session.job.') && s !== 'session.home_source'),
      'approval.resolve',
      'approval.tools',
      'approval.inbox',
      'approval.action.redeem',
      'approval.audit',
      'approval.rules.list',
      'approval.rules.create',
      'approval.rules.update',
      'approval.rules.delete',
      'approval.rules.test',
      'approval.bypasses.list',
      'approval.bypasses.create',
      'approval.bypasses.delete',
      'mcp.servers.list',
      'mcp.servers.create',
      'mcp.servers.update',
      'mcp.servers.delete',
      'files.upload',
      'files.read',
    ],
    publishes: ['userRevoked'],
    subscribes: ['userRevoked', 'sessionEvents', 'ephemeralEvents', 'userEvents'],
  },
  'session-worker': {
    calls: [
      'approval.check',
      'approval.register',
      'approval.get',
      'approval.decisions',
      'approval.cancel_session',
      'approval.reset_session',
      'approval.visible_tools',
      'tools.exec',
      'tools.preview',
      'tools.resolve',
      'tools.memory_turn',
      // Images of a turn for a vision client (attachments, `read_file` of an image).
      'tools.image',
      'mcp.servers.list',
      'mcp.catalog',
      'tasks.submit_async',
      // A turn that finished may notify its user (`turn_finished`, when no socket of theirs is open).
      'notify.event',
    ],
    publishes: [
      'sessionWake',
      'sessionCancel',
      'sessionTurnEnded',
      'sessionEvents',
      'ephemeralEvents',
      'userEvents',
      'toolCancel',
    ],
    subscribes: [
      'sessionWake',
      'sessionCancel',
      'approvalResolved',
      'toolAlive',
      // A finished turn is the doorbell of the conversation's title.
      'sessionTurnEnded',
    ],
  },
  'approval-service': {
    // A registered approval or question may notify its user (webhook, e-mail).
    calls: ['notify.event'],
    publishes: ['userEvents', 'approvalResolved', 'sessionWake', 'approvalRulesChanged', 'approvalBypassOpened'],
    subscribes: ['approvalRulesChanged', 'approvalBypassOpened'],
  },
  'tool-runner': {
    calls: [],
    publishes: ['ephemeralEvents', 'mcpServersChanged', 'toolAlive'],
    subscribes: ['toolCancel', 'mcpServersChanged'],
  },
  scheduler: {
    calls: [
      'session.home_source',
      'session.cancel',
      'session.job.start',
      'session.job.status',
      'session.job.deliver',
      'user.standing',
      'user.page',
      // A push notification of an approval carries a fresh action token; only the scheduler mints them.
      'approval.action_token.mint',
      // Whether a user has a socket open, for `turn_finished`.
      'user.presence',
    ],
    publishes: ['userEvents'],
    subscribes: ['sessionTurnEnded'],
  },
};

/** The inbox prefix a service's requests wait for replies on (`_INBOX.<service>`). */
export function natsInboxPrefix(service: SkaldService): string {
  return `_INBOX.${service}`;
}

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

/**
 * The subjects a service may publish to and subscribe on (replies to requests it received are allowed besides).
 * A direct request (`session.submit`) also grants its instances' own subjects (`session.submit.*`):
 * to its caller, and to its answering service. NATS users are per service, not per instance, so a
 * worker may subscribe to another worker's route too; nothing there is a secret or a state change
 * without the lease (any worker may take any submit), so the most such a worker could do is answer
 * a submit in the other one's place.
 */
export function natsPermissions(service: SkaldService): NatsPermissions {
  const g = NATS_GRANTS[service];
  const directOf = (subjects: readonly RequestSubject[]): string[] =>
    DIRECT_SUBJECTS.filter((s) => subjects.includes(s)).map(directPattern);
  const own = requestsOf(service);
  const patterns = (topics: readonly TopicKey[]): string[] => topics.map((t) => TOPICS[t].pattern);
  return {
    publish: [...new Set([...g.calls, ...directOf(g.calls), ...patterns(g.publishes)])],
    subscribe: [...new Set([...own, ...directOf(own), ...patterns(g.subscribes), `${natsInboxPrefix(service)}.>`])],
  };
}

/** A NATS user besides the services (operators' tools, tests): full permissions. */
export interface NatsExtraUser {
  user: string;
  password: string;
}

/**
 * The `authorization` block of a nats-server configuration: one user per service with its
 * permissions. `password(service)` gives the literal or a `$VARIABLE` the server reads from its
 * environment (k8s/base/infra/nats.conf uses `$NATS_PASSWORD_GATEWAY`, …).
 */
export function natsAuthorizationBlock(
  password: (service: SkaldService) => string,
  extra: NatsExtraUser[] = [],
): string {
  const list = (xs: string[]): string => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;
  const value = (p: string): string => (p.startsWith('$') ? p : JSON.stringify(p));
  const users = SKALD_SERVICES.map((service) => {
    const p = natsPermissions(service);
    return [
      `    {`,
      `      user: ${JSON.stringify(service)}`,
      `      password: ${value(password(service))}`,
      `      permissions: {`,
      `        publish: { allow: ${list(p.publish)} }`,
      `        subscribe: { allow: ${list(p.subscribe)} }`,
      `        allow_responses: true`,
      `      }`,
      `    }`,
    ].join('\n');
  });
  for (const u of extra) {
    users.push(`    { user: ${JSON.stringify(u.user)}, password: ${value(u.password)} }`);
  }
  return ['authorization {', '  users: [', users.join('\n'), '  ]', '}', ''].join('\n');
}

/** The environment variable holding a service's secret, e.g. `NATS_PASSWORD_SESSION_WORKER`. */
export function serviceSecretVar(prefix: string, service: SkaldService): string {
  return `${prefix}_${service.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * Services that use Redis, and for what: the gateway (login throttling counters shared by its
 * replicas), the session worker (LLM health), the scheduler (BullMQ). The others get no Redis
 * credentials at all.
 */
export const REDIS_SERVICES = ['gateway', 'session-worker', 'scheduler'] as const;
export type RedisService = (typeof REDIS_SERVICES)[number];

export interface RedisKeyPrefixes {
  /** `SKALD_BULL_PREFIX` (scheduler; BullMQ keys are `<prefix>:<queue>:…`). */
  bullPrefix: string;
  /** `SKALD_LLM_HEALTH_PREFIX` (session worker). */
  llmHealthPrefix: string;
  /** `SKALD_LOGIN_LIMIT_PREFIX` (gateway; failed-login counters per account and per address). */
  loginLimitPrefix: string;
}

/** The BullMQ queue the scheduler owns (apps/scheduler). */
export const SCHEDULER_QUEUE = 'skald-jobs';
/** The scheduler's BullMQ queue of notification deliveries (mirrors `notification_deliveries`). */
export const NOTIFY_QUEUE = 'skald-notify';

/**
 * One Redis ACL rule per service (`ACL SETUSER <name> <rules…>` or `user <name> <rules…>` in a
 * config file): its own keys only, no admin or dangerous commands, except `INFO` (the client's ready
 * check), `CLIENT SETNAME` and, for the scheduler, `CONFIG GET` (its eviction-policy check).
 */
export function redisAclRules(service: RedisService, password: string, prefixes: RedisKeyPrefixes): string[] {
  const common = ['on', 'resetkeys', 'resetchannels', 'nocommands', '+@all', '-@admin', '-@dangerous'];
  const secret = `>${password}`;
  if (service === 'scheduler')
    return [
      ...common,
      '+info',
      '+config|get',
      '+client|setname',
      '+client|getname',
      '+client|id',
      `~${prefixes.bullPrefix}:${SCHEDULER_QUEUE}:*`,
      `~${prefixes.bullPrefix}:${NOTIFY_QUEUE}:*`,
      secret,
    ];
  if (service === 'gateway') return [...common, '+info', '+client|setname', `~${prefixes.loginLimitPrefix}*`, secret];
  return [...common, '+info', '+client|setname', `~${prefixes.llmHealthPrefix}*`, secret];
}

/**
 * The name of an install whose database is `skald` (Compose, k8s, `npm start` by default): its Postgres roles are
 * `skald_gateway`, …, its Redis ACL users `skald-gateway`, …, its Redis keys start with `skald:`.
 */
export const DEFAULT_INSTANCE = 'skald';

/** What an install's name may be: it becomes part of Postgres role names (63 bytes at most) and Redis names. */
const INSTANCE_NAME = /^[a-z][a-z0-9_]{0,39}$/;

/**
 * The name of an install, carried by every name it shares with other installs on one Postgres cluster or Redis
 * server (its roles, ACL users, key prefixes): `SKALD_INSTANCE_NAME` when set, else the name of the database of
 * `databaseUrl` (lower-cased, other characters than letters, digits and `_` as `_`). Throws, naming the variable,
 * when neither gives a usable name.
 */
export function instanceName(env: { SKALD_INSTANCE_NAME?: string }, databaseUrl?: string): string {
  const given = env.SKALD_INSTANCE_NAME;
  if (given !== undefined && given !== '') {
    if (!INSTANCE_NAME.test(given))
      throw new Error(
        `SKALD_INSTANCE_NAME "${given}" is not usable: a lower-case letter, then up to 39 lower-case letters, digits or _`,
      );
    return given;
  }
  if (!databaseUrl) return DEFAULT_INSTANCE;
  let database: string;
  try {
    database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  } catch {
    throw new Error('DATABASE_URL is not a URL: the install is named after its database');
  }
  const derived = database.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  if (!INSTANCE_NAME.test(derived))
    throw new Error(
      `the database name "${database}" makes no install name (a letter, then up to 39 letters, digits or _): set SKALD_INSTANCE_NAME`,
    );
  return derived;
}

/** The Redis user name of a service of the install `instance`: `skald-gateway` for the default one. */
export function redisUser(service: RedisService, instance: string = DEFAULT_INSTANCE): string {
  return `${instance}-${service}`;
}

/** The Redis key prefixes of the install `instance` (its BullMQ queue, LLM health, login counters). */
export function redisKeyPrefixes(instance: string): RedisKeyPrefixes {
  return { bullPrefix: instance, llmHealthPrefix: `${instance}:llm:health:`, loginLimitPrefix: `${instance}:login:` };
}

/** The key prefixes when `SKALD_BULL_PREFIX`, `SKALD_LLM_HEALTH_PREFIX` and `SKALD_LOGIN_LIMIT_PREFIX` are not set (the apps' config defaults). */
export const DEFAULT_REDIS_PREFIXES: RedisKeyPrefixes = redisKeyPrefixes(DEFAULT_INSTANCE);

/**
 * The `--user …` arguments of `redis-server` for every Redis service, as a POSIX shell fragment
 * reading each password from `$REDIS_PASSWORD_<SERVICE>` (Compose and k8s start Redis with it).
 */
export function redisServerUserArgs(prefixes: RedisKeyPrefixes = DEFAULT_REDIS_PREFIXES): string {
  return REDIS_SERVICES.map((service) => {
    const rules = redisAclRules(service, `$${serviceSecretVar('REDIS_PASSWORD', service)}`, prefixes);
    return `--user ${redisUser(service)} ${rules.map((r) => `"${r}"`).join(' ')}`;
  }).join(' ');
}

/**
 * The whole nats-server configuration of a deployment (Compose and k8s mount the same file): each
 * service's password from `$NATS_PASSWORD_<SERVICE>` in the server's environment. Plain NATS, no
 * JetStream: nothing in NATS is the only copy of anything, so the server keeps no state.
 */
export function natsServerConfig(): string {
  return [
    '# Generated by scripts/gen-service-auth.js from libs/contracts/src/access.ts: do not edit by hand.',
    '# One user per service with only the subjects it uses; passwords come from the server environment.',
    'port: 4222',
    'http_port: 8222',
    natsAuthorizationBlock((s) => `$${serviceSecretVar('NATS_PASSWORD', s)}`),
  ].join('\n');
}
