import { toSessionDetail } from './debug-tree';

const at = new Date('2026-01-01T00:00:00Z');
const session = {
  id: 's1',
  source: 'web',
  agent_id: 'main',
  is_interactive: true,
  is_ephemeral: false,
  created_at: at,
};
const frame = {
  id: 'f1',
  parent_frame_id: null,
  parent_tool_call_id: null,
  agent_id: 'main',
  depth: 0,
  created_at: at,
};
const message = (o: Record<string, unknown>) => ({
  frame_id: 'f1',
  content: '',
  reasoning: null,
  is_synthetic: false,
  status: 'ok',
  metadata: null,
  created_at: at,
  ...o,
});
const toolCall = (o: Record<string, unknown>) => ({
  message_id: 'm2',
  name: 'execute_cmd',
  arguments: '{"command":"make"}',
  created_at: at,
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
