import { DataSource } from 'typeorm';
import { DEFAULT_APPROVAL_RULES } from '@skald/persistence/default-approval-rules';
import { ensureDatabase, migrateDown, migrateUp, MIGRATIONS } from '@skald/persistence';

jest.setTimeout(60_000);

// A database of its own next to the run's test database (dropped by the global teardown).
const URL = `${process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test'}_migrate`;
const TABLES = [
  'users',
  'api_tokens',
  'ws_tickets',
  'openai_conversations',
  'openai_requests',
  'sessions',
  'session_leases',
  'stack_frames',
  'chat_history',
  'tool_calls',
  'session_inbox',
  'session_events',
  'session_scratchpad',
  'session_todos',
  'tool_grants',
  'compaction_summaries',
  'approval_rules',
  'approval_rules_version',
  'approval_requests',
  'approval_bypasses',
  'approval_audit',
  'known_tools',
  'memory_documents',
  'tool_call_results',
  'mcp_servers',
  'llm_usage',
  'llm_client_pins',
  'user_agents',
  'user_inbox_queued',
  'user_turns_running',
  'user_settings',
  'scheduled_jobs',
  'job_runs',
  'notification_settings',
  'webhooks',
  'notifications',
  'notification_deliveries',
];

async function tables(): Promise<string[]> {
  const ds = new DataSource({ type: 'postgres', url: URL, extra: { max: 1 } });
  await ds.initialize();
  try {
    const rows: Array<{ table_name: string }> = await ds.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'skald_migrations' ORDER BY 1`,
    );
    return rows.map((r) => r.table_name);
  } finally {
    await ds.destroy();
  }
}

async function seededRules(): Promise<Array<{ tool_pattern: string; action: string; priority: number }>> {
  const ds = new DataSource({ type: 'postgres', url: URL, extra: { max: 1 } });
  await ds.initialize();
  try {
    return await ds.query(`SELECT tool_pattern, action, priority FROM approval_rules ORDER BY priority, ord`);
  } finally {
    await ds.destroy();
  }
}

describe('migrations', () => {
  beforeAll(async () => {
    await ensureDatabase(URL);
    // Start from nothing, whatever an earlier run left.
    await migrateDown(URL, MIGRATIONS.length).catch(() => undefined);
  });

  it('up creates every table with the default approval seed (default closed)', async () => {
    const applied = await migrateUp(URL);
    expect(applied).toHaveLength(MIGRATIONS.length);
    expect(await tables()).toEqual([...TABLES].sort());
    const rules = await seededRules();
    // The user-memory write exception is a built-in rule of the gate (code), not a seed row.
    expect(rules).toHaveLength(DEFAULT_APPROVAL_RULES.length - 1);
    expect(rules[rules.length - 1]).toEqual({ tool_pattern: '*', action: 'require', priority: 999999 });
    expect(rules).not.toContainEqual({ tool_pattern: '@fs_write', action: 'allow', priority: 10 });
    expect(rules).toContainEqual({ tool_pattern: 'execute_cmd', action: 'require', priority: 500 });
    expect(await migrateUp(URL)).toEqual([]);
  });

  it('down reverts every migration, and up again restores the schema', async () => {
    await migrateDown(URL, MIGRATIONS.length);
    expect(await tables()).toEqual([]);
    await migrateUp(URL);
    expect(await tables()).toEqual([...TABLES].sort());
  });
});
