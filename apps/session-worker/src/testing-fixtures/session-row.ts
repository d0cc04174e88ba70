import type { SessionsRow } from '@skald/persistence';

/** A `sessions` row as a new interactive conversation of user `u1` has it, with `over` applied. */
export function sessionRow(over: Partial<SessionsRow> = {}): SessionsRow {
  const at = new Date('2026-01-01T00:00:00Z');
  return {
    id: 's1',
    user_id: 'u1',
    source: 'web',
    agent_id: 'main',
    owner_role: 'user',
    is_interactive: true,
    is_ephemeral: false,
    auto_deny_approvals: false,
    is_active: true,
    scratchpad_session_id: 's1',
    security_group: null,
    run_context: null,
    client_pin: null,
    turn_state: 'finished',
    turn_id: null,
    stop_requested_at: null,
    last_seq: '0',
    created_at: at,
    updated_at: at,
    commit_failures: 0,
    commit_failure_key: null,
    title: null,
    title_source: null,
    turn_seq: null,
    holds_turn_slot: false,
    ...over,
  };
}
