import {
  SERVICE_TABLE_GRANTS,
  serviceDatabaseUrl,
  servicePasswordEnv,
  servicePasswordsFromEnv,
  serviceRoleName,
  SKALD_SERVICES,
} from './service-roles';

describe('service roles (pure)', () => {
  it('names one role and one password variable per service', () => {
    expect(SKALD_SERVICES.map(serviceRoleName)).toEqual([
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

  it('gives every service a table and every table at least SELECT', () => {
    for (const s of SKALD_SERVICES) {
      const tables = Object.entries(SERVICE_TABLE_GRANTS[s]);
      expect(tables.length).toBeGreaterThan(0);
      for (const [, privileges] of tables) expect(privileges).toContain('SELECT');
    }
  });
});
