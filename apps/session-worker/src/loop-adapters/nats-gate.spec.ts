import { AUTO_DENY_REASON } from '@skald/agent-loop';
import { SUBJECTS } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import { checkRequestOf, NatsGate } from './nats-gate';

const base = {
  sessionId: '00000000-0000-4000-8000-0000000000aa',
  userId: '00000000-0000-4000-8000-0000000000bb',
  source: 'cron',
  agentId: 'main',
  depth: 0,
  toolCallId: '00000000-0000-4000-8000-0000000000cc',
  name: 'write_file',
  arguments: { path: '/workspace/reports/r.txt', content: 'x' },
  autoDeny: false,
};
const noContext = { workingDirectory: null, systemPrompt: [] };

describe('NatsGate: the approval.check payload', () => {
  it("always carries the session's RunContext and, when it has one, its security group", () => {
    const req = checkRequestOf(
      {
        ...base,
        runContext: {
          workingDirectory: '/workspace/reports',
          systemPrompt: ['not for the gate'],
          allowFsReads: ['/workspace/data'],
          allowFsWrites: ['/workspace/reports'],
        },
        securityGroup: 'nightly',
      },
      'user',
      undefined,
    );
    const parsed = SUBJECTS['approval.check'].request.parse(req);
    expect(parsed).toMatchObject({
      security_group: 'nightly',
      run_context: {
        working_directory: '/workspace/reports',
        allow_fs_reads: ['/workspace/data'],
        allow_fs_writes: ['/workspace/reports'],
      },
    });
    expect(JSON.stringify(parsed)).not.toContain('not for the gate');
  });

  it('a session without a group or pre-authorised paths still sends its (empty) RunContext', () => {
    const parsed = SUBJECTS['approval.check'].request.parse(
      checkRequestOf({ ...base, runContext: noContext, securityGroup: null }, 'admin', undefined),
    );
    expect(parsed.security_group).toBeUndefined();
    expect(parsed.run_context).toEqual({ working_directory: null, allow_fs_reads: [], allow_fs_writes: [] });
    expect(parsed.actor).toEqual({ userId: base.userId, role: 'admin' });
  });

  it('says whether the session can ask a human (a headless run cannot: auto-deny)', () => {
    const headless = SUBJECTS['approval.check'].request.parse(
      checkRequestOf({ ...base, runContext: noContext, securityGroup: null, autoDeny: true }, 'user', undefined),
    );
    expect(headless.auto_deny).toBe(true);
    const interactive = SUBJECTS['approval.check'].request.parse(
      checkRequestOf({ ...base, runContext: noContext, securityGroup: null, autoDeny: false }, 'user', undefined),
    );
    expect(interactive.auto_deny).toBe(false);
  });

  it("an auto-denied call reads as the loop's unattended refusal; a policy deny as a policy deny", async () => {
    const replies = [
      { decision: 'deny', reason: 'approval required but the session cannot ask a human (auto-deny)', by: 'auto_deny' },
      { decision: 'deny', reason: 'rule 7', by: 'rule' },
    ];
    const bus = { call: async () => replies.shift() } as unknown as Bus;
    const gate = new NatsGate(bus, 'user');
    const req = { ...base, name: 'list_agents', runContext: noContext, securityGroup: null, autoDeny: true };
    expect(await gate.check(req)).toEqual({ kind: 'deny', reason: AUTO_DENY_REASON });
    expect(await gate.check(req)).toEqual({ kind: 'deny', reason: 'Tool call denied by policy: rule 7.' });
  });

  it('a non-object argument (invalid JSON from the model) is checked as no arguments', () => {
    const parsed = SUBJECTS['approval.check'].request.parse(
      checkRequestOf({ ...base, arguments: '{oops', runContext: noContext, securityGroup: null }, 'user', undefined),
    );
    expect(parsed.arguments).toEqual({});
  });
});

describe('NatsGate: what an unconditional Deny hides', () => {
  const request = {
    sessionId: base.sessionId,
    userId: base.userId,
    source: 'web',
    agentId: 'main',
    securityGroup: 'nightly',
    names: ['read_file', 'execute_task', 'activate_tools'],
  };

  it("asks approval.visible_tools about every name the round offers, the loop's own included", async () => {
    const asked: unknown[] = [];
    const bus = {
      call: (subject: string, payload: unknown) => {
        asked.push([subject, SUBJECTS['approval.visible_tools'].request.parse(payload)]);
        return Promise.resolve({ visible: ['read_file'] });
      },
    } as unknown as Bus;
    const visible = await new NatsGate(bus, 'user').visibleTools(request);
    expect(visible && [...visible]).toEqual(['read_file']);
    expect(asked).toEqual([
      [
        'approval.visible_tools',
        expect.objectContaining({ security_group: 'nightly', tools: ['read_file', 'execute_task', 'activate_tools'] }),
      ],
    ]);
  });

  it('hides nothing when the approval service cannot answer (every call is still checked)', async () => {
    const bus = { call: () => Promise.reject(new Error('no responders')) } as unknown as Bus;
    expect(await new NatsGate(bus, 'user').visibleTools(request)).toBeNull();
  });
});

describe('NatsGate: where the call lands', () => {
  /** A bus answering `tools.resolve` (or failing it) and `approval.check`, recording each request. */
  function fakeBus(resolve: (() => { landing: Array<string | null> }) | 'down', decision: 'allow' | 'require') {
    const calls: Array<{ subject: string; request: unknown }> = [];
    const bus = {
      call: async (subject: string, request: unknown) => {
        calls.push({ subject, request });
        if (subject === 'tools.resolve') {
          SUBJECTS['tools.resolve'].request.parse(request);
          if (resolve === 'down') throw new Error('no responders');
          return resolve();
        }
        SUBJECTS['approval.check'].request.parse(request);
        return { decision, reason: 'r' };
      },
    } as unknown as Bus;
    return { bus, calls };
  }
  const req = { ...base, runContext: noContext, securityGroup: null };

  it('asks the runner before the gate, sends the landing, and an allow carries it to the call', async () => {
    const { bus, calls } = fakeBus(() => ({ landing: ['/workspace/.git/hooks/r.txt'] }), 'allow');
    const d = await new NatsGate(bus, 'user').check(req);
    expect(calls.map((c) => c.subject)).toEqual(['tools.resolve', 'approval.check']);
    expect(calls[1].request).toMatchObject({ landing: ['/workspace/.git/hooks/r.txt'] });
    expect(d).toEqual({ kind: 'allow', landing: ['/workspace/.git/hooks/r.txt'] });
  });

  it('a require carries the landing too: the human approves the call bound to it', async () => {
    const { bus } = fakeBus(() => ({ landing: ['/workspace/real/notes.md'] }), 'require');
    const d = await new NatsGate(bus, 'user').check(req);
    expect(d).toEqual({ kind: 'require', landing: ['/workspace/real/notes.md'] });
  });

  it('the card shows the landing only when the shared resolver names the path otherwise', async () => {
    const gate = new NatsGate({} as Bus, 'user');
    const call = { ...req, name: 'write_file', arguments: { path: 'link/notes.md' } };
    const wd = { ...call, runContext: { ...noContext, workingDirectory: '/workspace/proj' } };
    expect(gate.landsAt(wd, ['/workspace/real/notes.md'])).toBe('/workspace/real/notes.md');
    expect(gate.landsAt(wd, ['/workspace/proj/link/notes.md'])).toBeNull();
    expect(gate.landsAt(call, ['/workspace/link/notes.md'])).toBeNull();
    expect(gate.landsAt(wd, [null])).toBeNull();
  });

  it('a runner that does not answer leaves the landing unknown ([]): the gate is still asked', async () => {
    const { bus, calls } = fakeBus('down', 'require');
    const d = await new NatsGate(bus, 'user').check(req);
    expect(calls[1].request).toMatchObject({ landing: [] });
    expect(d).toEqual({ kind: 'require' });
  });

  it('a tool without runner paths is not resolved', async () => {
    const { bus, calls } = fakeBus(() => ({ landing: [] }), 'allow');
    await new NatsGate(bus, 'user').check({ ...req, name: 'mcp__x__y', arguments: { path: 'a' } });
    expect(calls.map((c) => c.subject)).toEqual(['approval.check']);
    expect(calls[0].request).not.toHaveProperty('landing');
  });
});
