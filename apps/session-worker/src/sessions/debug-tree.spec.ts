import { toSessionDetail } from './debug-tree';
import type { ChatHistoryRow, StackFramesRow, ToolCallsRow } from '@skald/persistence';
import { sessionRow } from '../testing-fixtures/session-row';

const at = new Date('2026-01-01T00:00:00Z');
const session = sessionRow({ created_at: at });
const frame: StackFramesRow = {
  id: 'f1',
  ord: '1',
  session_id: 's1',
  parent_frame_id: null,
  parent_tool_call_id: null,
  agent_id: 'main',
  depth: 0,
  status: 'active',
  client: null,
  result: null,
  epoch: '1',
  created_at: at,
  closed_at: null,
};
const message = (o: Partial<ChatHistoryRow>): ChatHistoryRow => ({
  id: 'm1',
  ord: '1',
  session_id: 's1',
  frame_id: 'f1',
  role: 'user',
  content: '',
  reasoning: null,
  is_synthetic: false,
  status: 'ok',
  metadata: null,
  client_message_id: null,
  input_tokens: null,
  output_tokens: null,
  epoch: '1',
  created_at: at,
  cost_usd: null,
  tokens_estimated: false,
  llm_client: null,
  llm_model: null,
  superseded_at: null,
  ...o,
});
const toolCall = (o: Partial<ToolCallsRow>): ToolCallsRow => ({
  id: 'c1',
  ord: '1',
  session_id: 's1',
  frame_id: 'f1',
  message_id: 'm2',
  idx: 0,
  llm_call_id: 'l1',
  name: 'execute_cmd',
  arguments: '{"command":"make"}',
  status: 'done',
  result: null,
  result_type: null,
  error: null,
  request_id: null,
  child_frame_id: null,
  restart_hint: null,
  epoch: '1',
  created_at: at,
  started_at: null,
  finished_at: null,
  preview_hash: null,
  stale_reasks: 0,
  judged_landing: null,
  ...o,
});

describe('debug tree', () => {
  it('an interrupted call stored before its text was kept shows the interruption, not null', () => {
    const detail = toSessionDetail(
      session,
      [frame],
      [message({ id: 'm1', role: 'user', content: 'build' }), message({ id: 'm2', role: 'assistant' })],
      [toolCall({ id: 'c1', status: 'interrupted', result: null })],
    );
    const tool = detail.messages.find((m) => m.kind === 'tool');
    expect(tool).toMatchObject({
      status: 'interrupted',
      result:
        'tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.',
    });
  });

  it('a synthetic user row (a tic prompt) is marked is_synthetic', () => {
    const detail = toSessionDetail(
      { ...session, source: 'tic' },
      [frame],
      [message({ id: 'm1', role: 'user', content: 'tick', is_synthetic: true })],
      [],
    );
    expect(detail.messages[0]).toMatchObject({ kind: 'user', content: 'tick', is_synthetic: true });
  });

  it('messages a /stop discarded stand in the tree where they were sent, marked discarded', () => {
    const t = (s: number) => new Date(at.getTime() + s * 1000);
    const detail = toSessionDetail(
      session,
      [frame],
      [
        message({ id: 'm1', role: 'user', content: 'build', created_at: t(0) }),
        message({ id: 'm2', role: 'assistant', content: 'building', created_at: t(2) }),
        message({ id: 'm3', role: 'user', content: 'now test', created_at: t(9) }),
      ],
      [],
      [
        { id: 'd1', content: 'also lint', is_synthetic: false, attachments: null, created_at: t(3) },
        { id: 'd2', content: 'and docs', is_synthetic: false, attachments: null, created_at: t(4) },
      ],
    );
    expect(
      detail.messages.map((m) => [m.kind, 'content' in m ? m.content : '', 'status' in m ? m.status : '']),
    ).toEqual([
      ['user', 'build', 'ok'],
      ['assistant', 'building', ''],
      ['user', 'also lint', 'discarded'],
      ['user', 'and docs', 'discarded'],
      ['user', 'now test', 'ok'],
    ]);
  });
});
