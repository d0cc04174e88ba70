import {
  tableGrants,
  serviceDatabaseUrl,
  servicePasswordEnv,
  servicePasswordsFromEnv,
  serviceRoleName,
  SKALD_SERVICES,
} from './service-roles';
import { instanceName, redisKeyPrefixes, redisUser, DEFAULT_REDIS_PREFIXES } from '@skald/contracts';

describe('service roles (pure)', () => {
  it('names one role and one password variable per service', () => {
    expect(SKALD_SERVICES.map((s) => serviceRoleName(s, 'skald'))).toEqual([
      'skald_gateway',
      'skald_session_worker',
      'skald_approval_service',
      'skald_tool_runner',
      'skald_scheduler',
    ]);
    expect(servicePasswordEnv('approval-service')).toBe('SKALD_DB_PASSWORD_APPROVAL_SERVICE');
    expect(servicePasswordsFromEnv({ SKALD_DB_PASSWORD_TOOL_RUNNER: 'pw', SKALD_DB_PASSWORD_GATEWAY: '' })).toEqual({
      'tool-runner': 'pw',
    });
  });

  it("replaces the admin's user and password in the URL, keeping host, port, database and options", () => {
    const admin = 'postgres://postgres:admin-secret@db.internal:6543/skald?sslmode=require';
    expect(serviceDatabaseUrl(admin, 'session-worker')).toBe(
      'postgres://skald_session_worker@db.internal:6543/skald?sslmode=require',
    );
    const url = new URL(serviceDatabaseUrl(admin, 'gateway', 'p@ss:w%rd/?#'));
    expect(url.username).toBe('skald_gateway');
    expect(decodeURIComponent(url.password)).toBe('p@ss:w%rd/?#');
    expect(url.pathname).toBe('/skald');
  });

  it("names an install's roles, Redis users and keys after SKALD_INSTANCE_NAME or its database", () => {
    // The database `skald` (Compose, k8s, npm start by default) keeps the names its manifests spell out.
    expect(instanceName({}, 'postgres://postgres@db:5432/skald')).toBe('skald');
    expect(serviceDatabaseUrl('postgres://postgres@db:5432/skald', 'gateway')).toBe(
      'postgres://skald_gateway@db:5432/skald',
    );
    expect(redisUser('scheduler', 'skald')).toBe('skald-scheduler');
    expect(redisKeyPrefixes('skald')).toEqual(DEFAULT_REDIS_PREFIXES);
    // Two installs on one cluster: nothing of one is named like anything of the other.
    const staging = instanceName({}, 'postgres://postgres@db:5432/Skald-Staging');
    const prod = instanceName({ SKALD_INSTANCE_NAME: 'prod' }, 'postgres://postgres@db:5432/skald_staging');
    expect([staging, prod]).toEqual(['skald_staging', 'prod']);
    expect(serviceDatabaseUrl('postgres://postgres@db/Skald-Staging', 'session-worker')).toBe(
      'postgres://skald_staging_session_worker@db/Skald-Staging',
    );
    expect(serviceDatabaseUrl('postgres://postgres@db/x', 'gateway', undefined, prod)).toBe(
      'postgres://prod_gateway@db/x',
    );
    expect(redisUser('gateway', prod)).toBe('prod-gateway');
    expect(redisKeyPrefixes(prod)).toEqual({
      bullPrefix: 'prod',
      llmHealthPrefix: 'prod:llm:health:',
      loginLimitPrefix: 'prod:login:',
    });
    // Names Postgres would cut at 63 bytes, or that are no plain identifier, are refused with the variable to set.
    expect(() => instanceName({ SKALD_INSTANCE_NAME: 'Prod' })).toThrow(/SKALD_INSTANCE_NAME "Prod" is not usable/);
    expect(() => instanceName({}, `postgres://db/${'x'.repeat(41)}`)).toThrow(/set SKALD_INSTANCE_NAME/);
    expect(() => instanceName({}, 'postgres://db/9lives')).toThrow(/set SKALD_INSTANCE_NAME/);
    expect(instanceName({}, undefined)).toBe('skald');
  });

  it('gives every service a table and every table at least SELECT', () => {
    for (const s of SKALD_SERVICES) {
      const tables = tableGrants(s);
      expect(tables.length).toBeGreaterThan(0);
      for (const [, privileges] of tables) expect(privileges).toContain('SELECT');
    }
  });
});
