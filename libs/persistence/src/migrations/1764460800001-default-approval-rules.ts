import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The default approval seed of ARCHITECTURE.md ("Who checks what"): default closed.
 * Paths in rules are the lexically normalised path the model's argument resolves to: the user's
 * workspace is `/workspace`, memory documents are `user-memory/…` and `shared-memory/…`.
 */
export const DEFAULT_APPROVAL_RULES: ReadonlyArray<{
  id: string;
  tool_pattern: string;
  path_pattern?: string;
  action: 'allow' | 'deny' | 'require';
  priority: number;
  note: string;
}> = [
  {
    id: '00000000-0000-4000-8000-000000000001',
    tool_pattern: '@fs_write',
    path_pattern: 'user-memory/*',
    action: 'allow',
    priority: 10,
    note: "writes to the user's own memory documents are always allowed",
  },
  {
    id: '00000000-0000-4000-8000-000000000002',
    tool_pattern: '@fs_read',
    path_pattern: '/workspace/*',
    action: 'allow',
    priority: 100,
    note: 'read-only file tools inside the workspace',
  },
  {
    id: '00000000-0000-4000-8000-000000000003',
    tool_pattern: '@fs_read',
    path_pattern: 'user-memory/*',
    action: 'allow',
    priority: 100,
    note: 'read-only file tools on user memory',
  },
  {
    id: '00000000-0000-4000-8000-000000000004',
    tool_pattern: '@fs_read',
    path_pattern: 'shared-memory/*',
    action: 'allow',
    priority: 100,
    note: 'read-only file tools on shared memory',
  },
  {
    id: '00000000-0000-4000-8000-000000000005',
    tool_pattern: 'memory_search',
    action: 'allow',
    priority: 100,
    note: 'memory search reads memory documents only',
  },
  {
    id: '00000000-0000-4000-8000-000000000006',
    tool_pattern: 'update_scratchpad',
    action: 'allow',
    priority: 100,
    note: 'plumbing',
  },
  {
    id: '00000000-0000-4000-8000-000000000007',
    tool_pattern: 'write_todos',
    action: 'allow',
    priority: 100,
    note: 'plumbing',
  },
  {
    id: '00000000-0000-4000-8000-000000000008',
    tool_pattern: 'ask_user_clarification',
    action: 'allow',
    priority: 100,
    note: 'plumbing',
  },
  {
    id: '00000000-0000-4000-8000-000000000009',
    tool_pattern: 'activate_tools',
    action: 'allow',
    priority: 100,
    note: 'plumbing',
  },
  {
    id: '00000000-0000-4000-8000-00000000000a',
    tool_pattern: 'list_agents',
    action: 'allow',
    priority: 100,
    note: 'plumbing',
  },
  {
    id: '00000000-0000-4000-8000-00000000000b',
    tool_pattern: 'execute_cmd',
    action: 'require',
    priority: 500,
    note: 'commands are approved by a human',
  },
  {
    id: '00000000-0000-4000-8000-00000000000c',
    tool_pattern: 'restart',
    action: 'require',
    priority: 500,
    note: 'restarts are approved by a human',
  },
  {
    id: '00000000-0000-4000-8000-00000000000d',
    tool_pattern: 'execute_task',
    action: 'require',
    priority: 500,
    note: 'delegation is approved by a human',
  },
  {
    id: '00000000-0000-4000-8000-00000000000e',
    tool_pattern: 'mcp__*',
    action: 'require',
    priority: 500,
    note: 'MCP tools are approved by a human',
  },
  {
    id: '00000000-0000-4000-8000-00000000000f',
    tool_pattern: '*',
    action: 'require',
    priority: 999999,
    note: 'default closed: anything not explicitly allowed asks',
  },
];

export class DefaultApprovalRules1764460800001 implements MigrationInterface {
  name = 'DefaultApprovalRules1764460800001';

  async up(q: QueryRunner): Promise<void> {
    for (const r of DEFAULT_APPROVAL_RULES) {
      await q.query(
        `INSERT INTO approval_rules (id, tool_pattern, path_pattern, action, priority, note, is_seed)
         VALUES ($1, $2, $3, $4, $5, $6, true) ON CONFLICT (id) DO NOTHING`,
        [r.id, r.tool_pattern, r.path_pattern ?? null, r.action, r.priority, r.note],
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM approval_rules WHERE is_seed`);
  }
}
