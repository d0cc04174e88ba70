/**
 * A call a human approved with edited arguments runs with the edited arguments, judged by the gate
 * again; its result (done, failed or refused) begins with the note that a human edited it and how,
 * which is what the model reads next.
 */
import { expect } from '@jest/globals';
import { FakeGate, FakeHuman, LoopHarness, type FakeToolDefinition } from './testing';
import type { GateRequest } from './ports';

const DIFF = '--- content (original)\n+++ content (edited)\n@@ -1,1 +1,1 @@\n-agent\n+human';

function writer() {
  const files = new Map<string, string>();
  const tool: FakeToolDefinition = {
    name: 'write_file',
    preview: async (args) => {
      const { path, content } = args as { path: string; content: string };
      return { path, newContent: content };
    },
    run: async (args) => {
      const { path, content } = args as { path: string; content: string };
      if (path.includes('fail')) return { ok: false, error: 'disk full' };
      files.set(path, content);
      return { ok: true, content: `wrote ${path}`, changedPaths: [path] };
    },
  };
  return { files, tool };
}

const call = { name: 'write_file', arguments: { path: '/workspace/a.txt', content: 'agent' } };

function harness(
  edited: Record<string, unknown>,
  gate: (r: GateRequest) => 'allow' | 'deny' | 'require',
  workingDirectory: string | null = null,
) {
  const w = writer();
  const g = new FakeGate((r) => {
    const d = gate(r);
    return d === 'deny' ? { kind: 'deny', reason: 'Tool call denied by policy: no.' } : { kind: d };
  });
  const h = new LoopHarness({
    gate: g,
    human: new FakeHuman([{ kind: 'approved', edit: { arguments: edited, diff: DIFF } }]),
    tools: [w.tool],
    script: [{ toolCalls: [call] }, { content: 'ok' }],
    session: { runContext: { workingDirectory, systemPrompt: [] } },
  });
  return { h, w, g };
}

const toolMessage = (h: LoopHarness) =>
  h.model.calls[1]?.messages.find((m) => m.role === 'tool') as { content: string } | undefined;

describe('a call approved with edited arguments', () => {
  it('runs with the edited arguments, judged again, and the model reads that a human edited it and how', async () => {
    const { h, w, g } = harness({ path: '/workspace/a.txt', content: 'human' }, () => 'require');
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'ok' });
    expect(w.files.get('/workspace/a.txt')).toBe('human');
    // judged twice: the model's call, then the human's edit
    expect(g.checks.map((c) => (c.arguments as { content: string }).content)).toEqual(['agent', 'human']);
    const content = toolMessage(h)?.content ?? '';
    expect(content.split('\n')[0]).toBe(
      'A human edited this tool call before approving it; it ran with the edited arguments:',
    );
    expect(content).toContain('-agent\n+human');
    expect(content.endsWith('wrote /workspace/a.txt')).toBe(true);
    expect(h.toolCalls()[0]).toMatchObject({ status: 'done' });
  });

  it('an edit the gate denies where it lands is never run: the call ends rejected, saying why', async () => {
    const { h, w } = harness({ path: '/workspace/link/a.txt', content: 'human' }, (r) =>
      (r.arguments as { path: string }).path.includes('link') ? 'deny' : 'require',
    );
    await h.run('go');
    expect(w.files.size).toBe(0);
    const [row] = h.toolCalls();
    expect(row).toMatchObject({ status: 'rejected' });
    expect(row?.result).toContain('A human edited this tool call');
    expect(row?.result).toContain('denied by policy: no.');
  });

  it('a failed edited call still names the edit', async () => {
    // the model's call asks; the edited one the gate allows outright
    const { h } = harness({ path: '/workspace/fail.txt', content: 'human' }, (r) =>
      (r.arguments as { content: string }).content === 'agent' ? 'require' : 'allow',
    );
    await h.run('go');
    const [row] = h.toolCalls();
    expect(row).toMatchObject({ status: 'failed' });
    expect(row?.result).toMatch(/^A human edited this tool call[\s\S]*disk full$/);
  });

  it("a relative edited path is made absolute against the working directory, as the model's is", async () => {
    const { h, w, g } = harness({ path: 'b.txt', content: 'human' }, () => 'require', '/workspace/proj');
    await h.run('go');
    expect([...w.files.keys()]).toEqual(['/workspace/proj/b.txt']);
    expect((g.checks[1]?.arguments as { path: string }).path).toBe('/workspace/proj/b.txt');
    // the request carries what the gate judged the call with, for the approval service to judge an edit
    expect(h.human.requests[0]).toMatchObject({
      kind: 'approval',
      gate: { agentId: 'main', runContext: { workingDirectory: '/workspace/proj' } },
    });
  });
});
