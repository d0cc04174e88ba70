import { randomUUID } from 'node:crypto';
import { MIGRATIONS } from './migrations';
import { Client } from 'pg';
import {
  ADMIN_ONLY_TABLES,
  instanceOf,
  provisionServiceRoles,
  schemaWaitingFor,
  scramVerifier,
  SERVICE_TABLE_GRANTS,
  tableGrants,
  serviceDatabaseUrl,
  serviceRoleName,
  SKALD_SERVICES,
  SkaldService,
} from './service-roles';

jest.setTimeout(60_000);

// The run's test database, migrated by the global setup.
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
// The roles of the install this database makes (`skald_test_gateway`, …).
const role = (service: SkaldService) => serviceRoleName(service, instanceOf(ADMIN_URL));

async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  return c;
}

async function asRole<T>(service: SkaldService, work: (db: Client) => Promise<T>): Promise<T> {
  const db = await connect(serviceDatabaseUrl(ADMIN_URL, service));
  try {
    const { rows } = await db.query<{ me: string }>('SELECT current_user AS me');
    expect(rows[0].me).toBe(role(service));
    return await work(db);
  } finally {
    await db.end();
  }
}

/** Runs `sql` in a transaction that is rolled back, so the shared test database keeps no rows. */
async function tryRolledBack(db: Client, sql: string, params: unknown[] = []): Promise<unknown[]> {
  await db.query('BEGIN');
  try {
    return (await db.query<Record<string, unknown>>(sql, params)).rows;
  } finally {
    await db.query('ROLLBACK');
  }
}

async function sqlStateOf(db: Client, sql: string, params: unknown[] = []): Promise<string> {
  try {
    await tryRolledBack(db, sql, params);
    return 'ok';
  } catch (e) {
    return String((e as { code?: string }).code);
  }
}

describe('service roles', () => {
  beforeAll(async () => {
    // Two processes provisioning at once (two replicas of a deploy job) both succeed.
    await Promise.all([provisionServiceRoles(ADMIN_URL), provisionServiceRoles(ADMIN_URL)]);
  });

  it('names every table of the migrated schema exactly once: none forgotten, none unknown, none shared', async () => {
    const admin = await connect(ADMIN_URL);
    try {
      const { rows } = await admin.query<{ t: string }>(
        `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
      );
      const named = SKALD_SERVICES.flatMap((s) => Object.keys(SERVICE_TABLE_GRANTS[s]));
      expect(new Set(named).size).toBe(named.length);
      // A failure here: a migration added a table. Put it in SERVICE_TABLE_GRANTS (or ADMIN_ONLY_TABLES).
      expect(rows.map((r) => r.t)).toEqual([...named, ...ADMIN_ONLY_TABLES].sort());
    } finally {
      await admin.end();
    }
  });

  it('grants exactly the map, on every table of the schema', async () => {
    const admin = await connect(ADMIN_URL);
    try {
      const { rows } = await admin.query<{ grantee: string; table_name: string; privilege_type: string }>(
        `SELECT grantee, table_name, privilege_type FROM information_schema.role_table_grants
          WHERE table_schema = 'public' AND grantee = ANY($1::text[])`,
        [SKALD_SERVICES.map(role)],
      );
      const actual = rows.map((r) => `${r.grantee} ${r.table_name} ${r.privilege_type}`).sort();
      const expected = SKALD_SERVICES.flatMap((s) => [
        ...tableGrants(s).flatMap(([t, ps]) => ps.map((p) => `${role(s)} ${t} ${p}`)),
        ...ADMIN_ONLY_TABLES.map((t) => `${role(s)} ${t} SELECT`),
      ]).sort();
      expect(actual).toEqual(expected);
    } finally {
      await admin.end();
    }
  });

  it('is idempotent: a third run changes nothing and creates no role', async () => {
    const result = await provisionServiceRoles(ADMIN_URL);
    expect(result.created).toEqual([]);
    expect(result.withoutPassword).toEqual(SKALD_SERVICES.map(role));
  });

  it('gateway: its users and tickets, not the session history or the approval rules', async () => {
    await asRole('gateway', async (db) => {
      const id = randomUUID();
      expect(
        await tryRolledBack(
          db,
          `INSERT INTO users (id, email, password_hash, role) VALUES ($1, $2, 'x', 'user') RETURNING id`,
          [id, `${id}@roles.test`],
        ),
      ).toEqual([{ id }]);
      expect(await sqlStateOf(db, `DELETE FROM ws_tickets WHERE expires_at < now()`)).toBe('ok');
      expect(await sqlStateOf(db, `SELECT * FROM chat_history LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `SELECT * FROM session_events LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `SELECT * FROM approval_rules LIMIT 1`)).toBe('42501');
      // Users are disabled, never deleted.
      expect(await sqlStateOf(db, `DELETE FROM users WHERE id = $1`, [id])).toBe('42501');
    });
  });

  it('session-worker: its sessions and ledger (identity column included), not users or approvals', async () => {
    await asRole('session-worker', async (db) => {
      const rows = await tryRolledBack(
        db,
        `INSERT INTO llm_usage (user_id, purpose, client, model, input_tokens, output_tokens)
         VALUES ($1, 'round', 'c', 'm', 1, 1) RETURNING id`,
        [randomUUID()],
      );
      expect(rows).toHaveLength(1);
      expect(await sqlStateOf(db, `SELECT count(*) FROM sessions`)).toBe('ok');
      expect(await sqlStateOf(db, `SELECT * FROM users LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `SELECT * FROM approval_requests LIMIT 1`)).toBe('42501');
      // The inbox's counting trigger runs as the worker: insert, settle and a conversation's cascade.
      const [counted] = (await tryRolledBack(
        db,
        `WITH s AS (INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web') RETURNING id),
              i AS (INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery)
                    SELECT gen_random_uuid(), s.id, $2, 'c', 'x', 'queue' FROM s WHERE set_config('skald.queued_cap', '5', true) IS NOT NULL
                    RETURNING id)
         SELECT count(*) AS n FROM i`,
        [randomUUID(), randomUUID()],
      )) as Array<{ n: string }>;
      expect(counted.n).toBe('1');
      await db.query('BEGIN');
      try {
        const [sid, uid] = [randomUUID(), randomUUID()];
        await db.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sid, uid]);
        for (const c of ['a', 'b'])
          await db.query(
            `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery)
             VALUES (gen_random_uuid(), $1, $2, $3, 'x', 'queue')`,
            [sid, uid, c],
          );
        await db.query(
          `UPDATE session_inbox SET status = 'entered' WHERE session_id = $1 AND client_message_id = 'a'`,
          [sid],
        );
        const q = async () =>
          (await db.query<{ queued: number }>(`SELECT queued FROM user_inbox_queued WHERE user_id = $1`, [uid])).rows[0]
            ?.queued;
        expect(await q()).toBe(1);
        await db.query(`DELETE FROM sessions WHERE id = $1`, [sid]);
        expect(await q()).toBe(0);
      } finally {
        await db.query('ROLLBACK');
      }
      // Events and the ledger are append-only.
      expect(await sqlStateOf(db, `DELETE FROM session_events`)).toBe('42501');
      expect(await sqlStateOf(db, `UPDATE llm_usage SET input_tokens = 0`)).toBe('42501');
    });
  });

  it('approval-service: changes rules (the version trigger included), not tool calls', async () => {
    await asRole('approval-service', async (db) => {
      const rows = await tryRolledBack(
        db,
        `UPDATE approval_rules SET note = note WHERE tool_pattern = '*' RETURNING id`,
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(await sqlStateOf(db, `SELECT * FROM tool_calls LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `SELECT * FROM memory_documents LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `DELETE FROM approval_audit`)).toBe('42501');
    });
  });

  it('tool-runner: its memory documents, not users', async () => {
    await asRole('tool-runner', async (db) => {
      const user = randomUUID();
      expect(
        await tryRolledBack(
          db,
          `INSERT INTO memory_documents (id, scope, user_id, path, content) VALUES ($1, 'user', $2, 'notes.md', 'x')
           RETURNING user_id`,
          [randomUUID(), user],
        ),
      ).toEqual([{ user_id: user }]);
      expect(await sqlStateOf(db, `SELECT * FROM users LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `SELECT * FROM tool_calls LIMIT 1`)).toBe('42501');
      expect(await sqlStateOf(db, `DELETE FROM memory_documents`)).toBe('42501');
    });
  });

  it('scheduler: its jobs, and cannot write approval rules', async () => {
    await asRole('scheduler', async (db) => {
      const id = randomUUID();
      expect(
        await tryRolledBack(
          db,
          `INSERT INTO scheduled_jobs (id, user_id, kind, title, agent_id, prompt, cron)
           VALUES ($1, $2, 'cron', 't', 'main', 'p', '* * * * *') RETURNING id`,
          [id, randomUUID()],
        ),
      ).toEqual([{ id }]);
      expect(
        await sqlStateOf(
          db,
          `INSERT INTO approval_rules (id, tool_pattern, action, priority, name) VALUES ($1, '*', 'allow', 0, 'test rule')`,
          [randomUUID()],
        ),
      ).toBe('42501');
      expect(await sqlStateOf(db, `UPDATE approval_rules SET action = 'allow'`)).toBe('42501');
      expect(await sqlStateOf(db, `SELECT * FROM sessions LIMIT 1`)).toBe('42501');
    });
  });

  it.each(SKALD_SERVICES)('%s can create no table, truncate nothing, change no migration history', async (service) => {
    await asRole(service, async (db) => {
      expect(await sqlStateOf(db, `CREATE TABLE public.roles_probe (id int)`)).toBe('42501');
      expect(await sqlStateOf(db, `CREATE TABLE roles_probe (id int)`)).toBe('42501');
      const own = Object.keys(SERVICE_TABLE_GRANTS[service])[0];
      expect(await sqlStateOf(db, `TRUNCATE ${own}`)).toBe('42501');
      // Readable (a new release's pods wait for their schema in it), never writable.
      expect(await sqlStateOf(db, `SELECT name FROM skald_migrations LIMIT 1`)).toBe('ok');
      expect(await sqlStateOf(db, `INSERT INTO skald_migrations (timestamp, name) VALUES (1, 'x')`)).toBe('42501');
      expect(await sqlStateOf(db, `DELETE FROM skald_migrations`)).toBe('42501');
    });
  });

  it.each(SKALD_SERVICES)(
    '%s waits for a migration of its release that is not applied, and for its grants, then for nothing',
    async (service) => {
      const url = serviceDatabaseUrl(ADMIN_URL, service);
      const names = MIGRATIONS.map((m) => m.name);
      expect(await schemaWaitingFor(url, service, names)).toEqual([]);
      expect(await schemaWaitingFor(url, service, [...names, 'NextRelease9999999999999'])).toEqual([
        'migration NextRelease9999999999999',
      ]);
      // A table of its grants it cannot use yet (`roles` not run since the migration): waiting.
      const [table, privileges] = tableGrants(service)[0];
      const admin = await connect(ADMIN_URL);
      try {
        await admin.query(`REVOKE ALL ON TABLE ${table} FROM ${role(service)}`);
        expect(await schemaWaitingFor(url, service, names)).toEqual([`${privileges.join(', ')} on ${table}`]);
      } finally {
        await provisionServiceRoles(ADMIN_URL);
        await admin.end();
      }
      expect(await schemaWaitingFor(url, service, names)).toEqual([]);
    },
  );

  it('stores a password as the SCRAM verifier Postgres itself computes', async () => {
    const admin = await connect(ADMIN_URL);
    const probe = `skald_scram_probe_${process.pid}`;
    try {
      await admin.query(`DROP ROLE IF EXISTS ${probe}`);
      await admin.query(`CREATE ROLE ${probe}`);
      await admin.query(`SET password_encryption = 'scram-sha-256'`);
      for (const pw of ['pencil', 'p@ss:w%rd/?#', 'Grüße']) {
        await admin.query(`ALTER ROLE ${probe} PASSWORD ${admin.escapeLiteral(pw)}`);
        const { rows } = await admin.query<{ v: string }>(`SELECT rolpassword AS v FROM pg_authid WHERE rolname = $1`, [
          probe,
        ]);
        const salt = Buffer.from(rows[0].v.split('$')[1].split(':')[1], 'base64');
        expect(scramVerifier(pw, salt)).toBe(rows[0].v);
      }
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${probe}`);
      await admin.end();
    }
  });
});
