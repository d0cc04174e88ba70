import { DataSource } from 'typeorm';
import { randomUUID } from 'node:crypto';
import { ruleName, RuleName } from '@skald/contracts';
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
  'admin_session_reads',
  'oidc_flows',
  'oidc_handoffs',
  'user_identities',
  'login_sessions',
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
  'group_members',
  'groups',
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
  'llm_usage_daily',
  'llm_call_failures',
  'llm_client_pins',
  'llm_user_budgets',
  'llm_budget_users',
  'llm_budget_holds',
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
  'push_subscriptions',
  'approval_action_tokens',
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

  it('names every stored rule as contracts name a rule by default (the backfill), whatever its note', async () => {
    // back to just before the rule names, with rules whose notes and patterns test the derivation
    const steps = MIGRATIONS.length - MIGRATIONS.findIndex((m) => m.name === 'RuleNames1764460806700');
    await migrateDown(URL, steps);
    const notes = [
      null,
      '',
      '   ',
      '\nsecond line only',
      '\tindented\tnote  \nmore',
      '\u00a0\u3000wide spaces\u2028 and a separator',
      'vacuum the cache first',
      'bell\u0007 and \u0085 next line',
      `${'x'.repeat(78)}😀😀 past the bound`,
      'é'.repeat(200),
    ];
    const ds = new DataSource({ type: 'postgres', url: URL, extra: { max: 1 } });
    await ds.initialize();
    try {
      for (const [i, note] of notes.entries())
        await ds.query(
          `INSERT INTO approval_rules (id, tool_pattern, path_pattern, command_pattern, action, priority, note)
           VALUES ($1, $2, $3, $4, 'require', $5, $6)`,
          [randomUUID(), `tool_${i}`, i % 2 ? 'src/*' : null, i % 3 ? null : 'git *', 1000 + i, note],
        );
    } finally {
      await ds.destroy();
    }
    await migrateUp(URL);
    const check = new DataSource({ type: 'postgres', url: URL, extra: { max: 1 } });
    await check.initialize();
    try {
      const rows: Array<{
        name: string;
        action: string;
        tool_pattern: string;
        path_pattern: string | null;
        command_pattern: string | null;
        note: string | null;
      }> = await check.query(
        `SELECT name, action, tool_pattern, path_pattern, command_pattern, note FROM approval_rules`,
      );
      expect(rows.length).toBeGreaterThanOrEqual(notes.length);
      for (const r of rows) {
        expect(r.name).toBe(ruleName(r));
        expect(RuleName.safeParse(r.name)).toEqual({ success: true, data: r.name });
      }
    } finally {
      await check.destroy();
    }
  });
});
