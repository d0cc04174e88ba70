import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { TableRows } from './generated/rows';
import { instanceName, serviceSecretVar, SKALD_SERVICES, type SkaldService } from '@skald/contracts';

// The five apps, each connecting to Postgres as a role of its own, granted only its tables.
export { SKALD_SERVICES, type SkaldService };

export type TablePrivilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

/** A service's privileges, table by table (tables as the generated row types name them). */
type TableGrants = Readonly<{ [T in keyof TableRows]?: readonly TablePrivilege[] }>;

/**
 * The single source of truth of who may touch which table, read off the SQL statements of each app; a table is
 * named as the generated row types name it, so a misspelt or dropped table does not compile. `UPDATE` is also what
 * `ON CONFLICT DO UPDATE` and `SELECT … FOR UPDATE / FOR SHARE` need; every statement with a `WHERE` or `RETURNING`
 * needs `SELECT`. A table named nowhere here is reachable by no service (only by the migration admin).
 */
export const SERVICE_TABLE_GRANTS: Readonly<Record<SkaldService, TableGrants>> = {
  gateway: {
    users: ['SELECT', 'INSERT', 'UPDATE'],
    api_tokens: ['SELECT', 'INSERT', 'UPDATE'],
    // Expired tickets are deleted when a new one is issued.
    ws_tickets: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // Conversations of the OpenAI-compatible endpoint: opened, moved on by each answer.
    openai_conversations: ['SELECT', 'INSERT', 'UPDATE'],
    // The requests a retry attaches to: replaced by the next identical request, deleted after a day.
    openai_requests: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // Admins' reads of other users' conversations: appended, never changed.
    admin_session_reads: ['SELECT', 'INSERT'],
    // Single sign-on: a flow and a handoff are taken once (deleted), expired ones deleted when a new one starts.
    oidc_flows: ['SELECT', 'INSERT', 'DELETE'],
    oidc_handoffs: ['SELECT', 'INSERT', 'DELETE'],
    user_identities: ['SELECT', 'INSERT', 'UPDATE'],
    // A row per live session JWT: deleted at sign-out, beyond the per-user cap, and when expired.
    login_sessions: ['SELECT', 'INSERT', 'DELETE'],
  },
  'session-worker': {
    // Deleting a conversation deletes its session; the rows it owns go with it (ON DELETE CASCADE).
    sessions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // Taken with ON CONFLICT DO UPDATE; checked with FOR SHARE in every turn write.
    session_leases: ['SELECT', 'INSERT', 'UPDATE'],
    stack_frames: ['SELECT', 'INSERT', 'UPDATE'],
    chat_history: ['SELECT', 'INSERT', 'UPDATE'],
    tool_calls: ['SELECT', 'INSERT', 'UPDATE'],
    session_inbox: ['SELECT', 'INSERT', 'UPDATE'],
    // Kept by the row trigger on session_inbox (runs as the role that changed the inbox): an upsert, a decrement.
    user_inbox_queued: ['SELECT', 'INSERT', 'UPDATE'],
    // Kept by the row triggers on sessions (turn slots); locked by the submit and the driver to judge the cap.
    user_turns_running: ['SELECT', 'INSERT', 'UPDATE'],
    session_events: ['SELECT', 'INSERT'],
    session_scratchpad: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    session_todos: ['SELECT', 'INSERT', 'UPDATE'],
    // Granted with ON CONFLICT DO NOTHING; a session reset deletes them.
    tool_grants: ['SELECT', 'INSERT', 'DELETE'],
    compaction_summaries: ['SELECT', 'INSERT', 'UPDATE'],
    // A ledger: appended, summed, never changed.
    llm_usage: ['SELECT', 'INSERT'],
    // Kept by the statement trigger on llm_usage (runs as the role that inserted): an upsert.
    llm_usage_daily: ['SELECT', 'INSERT', 'UPDATE'],
    // Appended when a model call gets no answer, never changed.
    llm_call_failures: ['SELECT', 'INSERT'],
    llm_client_pins: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    user_agents: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    user_settings: ['SELECT', 'INSERT', 'UPDATE'],
    // Groups and memberships: an admin's edits, the login's sync of the identity provider's claim (both
    // through the gateway, on NATS); read with each turn's start.
    groups: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    group_members: ['SELECT', 'INSERT', 'DELETE'],
    // Budgets: an admin's limits of a user (through the gateway, on NATS), read with each turn's start; the
    // admission lock row of each limited user; the holds of calls in flight (expiring, deleted once settled).
    llm_user_budgets: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    llm_budget_users: ['SELECT', 'INSERT', 'UPDATE'],
    llm_budget_holds: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  },
  'approval-service': {
    approval_rules: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // Bumped by the statement trigger on approval_rules, which runs as the role that changed the rules.
    approval_rules_version: ['SELECT', 'UPDATE'],
    approval_requests: ['SELECT', 'INSERT', 'UPDATE'],
    approval_bypasses: ['SELECT', 'INSERT', 'UPDATE'],
    // An audit trail: appended, never changed.
    approval_audit: ['SELECT', 'INSERT'],
    // Per user, bounded: the least recently offered names are deleted past the bound.
    known_tools: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // Used once (UPDATE … used_at); swept once expired.
    approval_action_tokens: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  },
  'tool-runner': {
    // Written under SELECT … FOR UPDATE; documents are never deleted.
    memory_documents: ['SELECT', 'INSERT', 'UPDATE'],
    tool_call_results: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    mcp_servers: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  },
  scheduler: {
    scheduled_jobs: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // Deleted only by the cascade of a deleted job, which runs as the table owner.
    job_runs: ['SELECT', 'INSERT', 'UPDATE'],
    notification_settings: ['SELECT', 'INSERT', 'UPDATE'],
    webhooks: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    // The outbox: deleted only by the cascade of a deleted user or webhook, which runs as the table owner.
    notifications: ['SELECT', 'INSERT'],
    notification_deliveries: ['SELECT', 'INSERT', 'UPDATE'],
    // Deleted by their owner, or when the push service answers 404/410.
    push_subscriptions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  },
};

/** The tables `service` is granted, each with its privileges. */
export function tableGrants(service: SkaldService): Array<[table: string, privileges: readonly TablePrivilege[]]> {
  return Object.entries(SERVICE_TABLE_GRANTS[service]).flatMap(([table, privileges]) =>
    privileges ? [[table, privileges] as [string, readonly TablePrivilege[]]] : [],
  );
}

/**
 * Tables no service may write: the migration admin's own. Every service may read them: the list of applied
 * migrations is how a new release's pods wait for their schema (`cli.js wait <app>`); it holds names only.
 */
export const ADMIN_ONLY_TABLES: readonly string[] = ['skald_migrations'];

/**
 * The service's role in the install `instance` (contracts' `instanceName`): `skald_session_worker` for
 * `session-worker` of the install `skald`, `staging_session_worker` of the install `staging`. Roles belong to
 * the whole Postgres cluster: installs sharing one never touch each other's.
 */
export function serviceRoleName(service: SkaldService, instance: string): string {
  return `${instance}_${service.replace(/-/g, '_')}`;
}

/** The install named by `adminUrl`'s database, or by `SKALD_INSTANCE_NAME` in `env`. */
export function instanceOf(adminUrl: string, env: { SKALD_INSTANCE_NAME?: string } = {}): string {
  return instanceName(env, adminUrl);
}

/** `SKALD_DB_PASSWORD_SESSION_WORKER` for `session-worker`: the env var holding the role's password. */
export function servicePasswordEnv(service: SkaldService): string {
  return serviceSecretVar('SKALD_DB_PASSWORD', service);
}

/** The role passwords named by `SKALD_DB_PASSWORD_*` in `env` (a service without one is left out). */
export function servicePasswordsFromEnv(env: NodeJS.ProcessEnv): Partial<Record<SkaldService, string>> {
  const out: Partial<Record<SkaldService, string>> = {};
  for (const s of SKALD_SERVICES) {
    const pw = env[servicePasswordEnv(s)];
    if (pw) out[s] = pw;
  }
  return out;
}

/** The admin URL with its user (and password) replaced by the service's role (of the install `instance`). */
export function serviceDatabaseUrl(
  adminUrl: string,
  service: SkaldService,
  password?: string,
  instance: string = instanceOf(adminUrl),
): string {
  const u = new URL(adminUrl);
  u.username = serviceRoleName(service, instance);
  // Never carry the admin's password over; pg decodes the percent-encoding.
  u.password = password ? encodeURIComponent(password) : '';
  return u.toString();
}

/**
 * A SCRAM-SHA-256 verifier as Postgres stores it (what psql's `\password` sends), so a password
 * never reaches the server, its statement log or `pg_stat_activity` in clear.
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(Buffer.from(password.normalize('NFKC'), 'utf8'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export interface ProvisionResult {
  /** Roles this call created. */
  created: string[];
  /** Roles whose password this call set. */
  passwordsSet: string[];
  /** Roles that got no password from this call (an existing password is left as it is). */
  withoutPassword: string[];
}

type Log = (msg: string, fields?: Record<string, unknown>) => void;

const IDENT = /^[a-z_][a-z0-9_]*$/;
const LOCK_KEY = 'skald:service-roles';

function ident(name: string): string {
  if (!IDENT.test(name)) throw new Error(`"${name}" is not a plain identifier`);
  return `"${name}"`;
}

function sqlState(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String(e.code) : undefined;
}

/**
 * Creates the five service roles of the install `instance` when missing (LOGIN, nothing else) and sets the
 * passwords given, then, in the database of `adminUrl`, takes every privilege on schema `public` away from them
 * and grants exactly `SERVICE_TABLE_GRANTS`. Idempotent, and safe to run from two processes at once.
 * Re-run it after every migration: a new table is reachable by nobody until it is in the map.
 */
export async function provisionServiceRoles(
  adminUrl: string,
  passwords: Partial<Record<SkaldService, string>> = {},
  log: Log = () => undefined,
  instance: string = instanceOf(adminUrl),
): Promise<ProvisionResult> {
  const db = new Client({ connectionString: adminUrl, application_name: 'skald-roles' });
  await db.connect();
  try {
    const result: ProvisionResult = { created: [], passwordsSet: [], withoutPassword: [] };
    for (const service of SKALD_SERVICES) {
      const role = serviceRoleName(service, instance);
      if (await ensureRole(db, role)) result.created.push(role);
      const password = passwords[service];
      if (password) {
        // A literal: ALTER ROLE takes no parameters. The verifier is no secret worth the name.
        await retryConcurrentUpdate(() => db.query(`ALTER ROLE ${ident(role)} PASSWORD '${scramVerifier(password)}'`));
        result.passwordsSet.push(role);
      } else result.withoutPassword.push(role);
    }
    await retryConcurrentUpdate(() => grantAll(db, instance));
    log('service roles provisioned', { ...result, instance, database: new URL(adminUrl).pathname.slice(1) });
    return result;
  } finally {
    await db.end();
  }
}

/** Creates the role unless it exists (another process may be creating it right now); true if created. */
async function ensureRole(db: Client, role: string): Promise<boolean> {
  const attrs = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS';
  const { rows } = await db.query<{ ok: boolean }>(
    `SELECT rolcanlogin AND NOT rolsuper AND NOT rolcreatedb AND NOT rolcreaterole AND NOT rolinherit
            AND NOT rolreplication AND NOT rolbypassrls AS ok
       FROM pg_roles WHERE rolname = $1`,
    [role],
  );
  if (rows.length === 0) {
    try {
      await db.query(`CREATE ROLE ${ident(role)} ${attrs}`);
      return true;
    } catch (e) {
      // duplicate_object, or the unique index of pg_authid when both inserts got that far.
      if (sqlState(e) !== '42710' && sqlState(e) !== '23505') throw e;
      return false;
    }
  }
  if (!rows[0].ok) await retryConcurrentUpdate(() => db.query(`ALTER ROLE ${ident(role)} ${attrs}`));
  return false;
}

/** One transaction, so a running app never sees its privileges missing between REVOKE and GRANT. */
async function grantAll(db: Client, instance: string): Promise<void> {
  await db.query('BEGIN');
  try {
    // Advisory locks are per database: this serialises provisioning of this database only.
    await db.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [LOCK_KEY]);
    const { rows: dbRows } = await db.query<{ name: string }>(`SELECT current_database() AS name`);
    const database = `"${dbRows[0].name.replace(/"/g, '""')}"`;
    const named = SKALD_SERVICES.flatMap((s) => Object.keys(SERVICE_TABLE_GRANTS[s]));
    const { rows: missing } = await db.query<{ t: string }>(
      `SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass('public.' || quote_ident(t)) IS NULL`,
      [named],
    );
    if (missing.length > 0)
      throw new Error(`tables ${missing.map((m) => m.t).join(', ')} do not exist: migrate the database first`);
    // A database from before Postgres 15 lets PUBLIC create in `public`: no role may.
    await db.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    for (const service of SKALD_SERVICES) {
      const role = ident(serviceRoleName(service, instance));
      await db.query(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`);
      await db.query(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${role}`);
      await db.query(`REVOKE CREATE ON SCHEMA public FROM ${role}`);
      await db.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
      await db.query(`GRANT CONNECT ON DATABASE ${database} TO ${role}`);
      for (const table of ADMIN_ONLY_TABLES) await db.query(`GRANT SELECT ON TABLE public.${ident(table)} TO ${role}`);
      for (const [table, privileges] of tableGrants(service)) {
        await db.query(`GRANT ${privileges.join(', ')} ON TABLE public.${ident(table)} TO ${role}`);
        if (!privileges.includes('INSERT')) continue;
        // Sequences the table owns (serial, identity): inserting draws from them.
        const { rows: seqs } = await db.query<{ seq: string }>(
          `SELECT s.relname AS seq FROM pg_depend d
             JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
            WHERE d.refobjid = $1::regclass AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')`,
          [`public.${table}`],
        );
        for (const { seq } of seqs) await db.query(`GRANT USAGE, SELECT ON SEQUENCE public.${ident(seq)} TO ${role}`);
      }
    }
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * Two processes changing one catalog row (a role's password, in two databases) can fail with
 * "tuple concurrently updated" (XX000): the later one retries.
 */
async function retryConcurrentUpdate<T>(work: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (e) {
      const concurrent = sqlState(e) === 'XX000' && /concurrently/.test(String(e));
      if (!concurrent || i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 50 * i));
    }
  }
}

/**
 * What a service of this release still waits for in the database of `url` (its own role's connection): the
 * migrations of this release not applied yet, and the tables of its grants it cannot use yet (the migration runs
 * `roles` after `up`). Empty when it may start.
 */
export async function schemaWaitingFor(
  url: string,
  service: SkaldService,
  migrationNames: string[],
): Promise<string[]> {
  const db = new Client({ connectionString: url, application_name: `skald-wait-${service}` });
  await db.connect();
  try {
    const waiting: string[] = [];
    const { rows: applied } = await db
      .query<{ name: string }>(`SELECT name FROM skald_migrations`)
      .catch((e: unknown) => {
        // Not migrated at all yet (42P01), or not provisioned yet (42501): everything is pending.
        if (sqlState(e) === '42P01' || sqlState(e) === '42501') return { rows: [] as { name: string }[] };
        throw e;
      });
    const done = new Set(applied.map((r) => r.name));
    waiting.push(...migrationNames.filter((n) => !done.has(n)).map((n) => `migration ${n}`));
    for (const [table, privileges] of tableGrants(service)) {
      const { rows } = await db.query<{ ok: boolean }>(
        `SELECT to_regclass($1) IS NOT NULL AND has_table_privilege($1, $2) AS ok`,
        [`public.${table}`, privileges.join(', ')],
      );
      if (!rows[0]?.ok) waiting.push(`${privileges.join(', ')} on ${table}`);
    }
    return waiting;
  } finally {
    await db.end();
  }
}
