import { InMemoryStore, LoopHarness, agent, defaultSession } from './testing';

describe('update_scratchpad', () => {
  it('saves and deletes notes, and the next round sees them as the scratchpad system message', async () => {
    const h = new LoopHarness({
      script: [
        {
          toolCalls: [
            { name: 'update_scratchpad', arguments: { key: 'db_url', value: 'postgres://localhost/mydb' } },
            { name: 'update_scratchpad', arguments: { key: 'tmp', value: 'x' } },
          ],
        },
        { toolCalls: [{ name: 'update_scratchpad', arguments: { key: 'tmp', value: '' } }] },
        { content: 'ok' },
      ],
    });
    await h.run('remember');
    expect(h.model.calls[1].messages[1]).toEqual({
      role: 'system',
      content:
        '<scratchpad>\n  <note key="db_url">postgres://localhost/mydb</note>\n  <note key="tmp">x</note>\n</scratchpad>',
    });
    expect(await h.store.getScratchpad('session-1')).toEqual([{ key: 'db_url', value: 'postgres://localhost/mydb' }]);
  });

  it('async children share the parent scratchpad through the scratchpad session id', async () => {
    const store = new InMemoryStore();
    store.addSession(defaultSession({ id: 'parent' }));
    store.addSession(defaultSession({ id: 'task', scratchpadSessionId: 'parent', isInteractive: false }));
    const h = new LoopHarness({
      store,
      session: { id: 'task' },
      script: [
        { toolCalls: [{ name: 'update_scratchpad', arguments: { key: 'found', value: '42' } }] },
        { content: 'ok' },
      ],
    });
    await h.run('task prompt');
    expect(await store.getScratchpad('parent')).toEqual([{ key: 'found', value: '42' }]);
    expect(await store.getScratchpad('task')).toEqual([]);
  });

  it('fails without a key', async () => {
    const h = new LoopHarness({
      script: [{ toolCalls: [{ name: 'update_scratchpad', arguments: { value: 'x' } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.toolCalls()[0].status).toBe('failed');
  });
});

describe('write_todos', () => {
  it('stores the todo list of the frame and answers with it', async () => {
    const h = new LoopHarness({
      script: [
        {
          toolCalls: [
            {
              name: 'write_todos',
              arguments: {
                todos: [
                  { content: 'plan', status: 'done' },
                  { content: 'code', status: 'in_progress' },
                  { content: 'test', status: 'pending' },
                ],
              },
            },
          ],
        },
        { toolCalls: [{ name: 'write_todos', arguments: { todos: [{ content: 'bad', status: 'later' }] } }] },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    const [ok, bad] = h.toolCalls();
    expect(ok.result).toBe('[x] plan\n[~] code\n[ ] test');
    expect(bad.status).toBe('failed');
    expect(await h.store.getTodos(h.frames()[0].id)).toEqual([
      { content: 'plan', status: 'done' },
      { content: 'code', status: 'in_progress' },
      { content: 'test', status: 'pending' },
    ]);
  });
});

describe('activate_tools', () => {
  const githubTool = {
    name: 'mcp__github__list_issues',
    group: 'github',
    run: async () => ({ ok: true as const, content: '[]' }),
  };

  it('granted groups are visible from the next round of the same turn, session-scoped at the root', async () => {
    const h = new LoopHarness({
      tools: [githubTool],
      script: [
        { toolCalls: [{ name: 'activate_tools', arguments: { groups: ['github'] } }] },
        { toolCalls: [{ name: 'mcp__github__list_issues' }] },
        { content: 'no issues' },
      ],
    });
    await h.run('issues?');
    const names = h.model.calls.map((c) => c.tools.map((t) => t.function.name).includes('mcp__github__list_issues'));
    expect(names).toEqual([false, true, true]);
    expect(h.toolCalls()[1].status).toBe('done');
    expect(await h.store.getGrants({ kind: 'session', sessionId: 'session-1' })).toEqual(['github']);
  });

  it('is frame-scoped in sub-agents: a child grant is not visible to the root', async () => {
    const h = new LoopHarness({
      tools: [githubTool],
      agents: [agent({ id: 'worker' })],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'p' } }] },
        { toolCalls: [{ name: 'activate_tools', arguments: { groups: ['github'] } }] },
        { content: 'child done' },
        { content: 'root done' },
      ],
    });
    await h.run('go');
    const child = h.frames().find((f) => f.depth === 1)!;
    expect(await h.store.getGrants({ kind: 'frame', frameId: child.id })).toEqual(['github']);
    expect(await h.store.getGrants({ kind: 'session', sessionId: 'session-1' })).toEqual([]);
    expect(h.model.calls[3].tools.map((t) => t.function.name)).not.toContain('mcp__github__list_issues');
    expect(h.model.calls[2].tools.map((t) => t.function.name)).toContain('mcp__github__list_issues');
  });

  it('rejects unknown groups, saying which it could not activate and what it can', async () => {
    const h = new LoopHarness({
      tools: [githubTool],
      script: [{ toolCalls: [{ name: 'activate_tools', arguments: { groups: ['nope'] } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'failed',
      result: 'Not activated: nope (no such tool group). Groups you can activate: github.',
    });
  });

  it('`config` unlocks nothing where no tool set lists it: it is refused, and said why', async () => {
    const h = new LoopHarness({
      tools: [githubTool],
      script: [{ toolCalls: [{ name: 'activate_tools', arguments: { groups: ['config'] } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'failed',
      result:
        'Not activated: config (there are no configuration tools here; settings are changed by the user in the app). Groups you can activate: github.',
    });
    expect(await h.store.getGrants({ kind: 'session', sessionId: 'session-1' })).toEqual([]);
  });

  it('activates the groups it can and names the ones it could not', async () => {
    const h = new LoopHarness({
      tools: [githubTool],
      script: [
        { toolCalls: [{ name: 'activate_tools', arguments: { groups: ['github', 'config', 'nope'] } }] },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'done',
      result:
        'Activated: github. Their tools are available from your next step. Not activated: config (there are no configuration tools here; settings are changed by the user in the app), nope (no such tool group).',
    });
    expect(await h.store.getGrants({ kind: 'session', sessionId: 'session-1' })).toEqual(['github']);
  });

  it('a tool set that has a `config` group: activating it unlocks its tools from the next round', async () => {
    const h = new LoopHarness({
      tools: [{ name: 'set_model', group: 'config', run: async () => ({ ok: true as const, content: 'set' }) }],
      script: [
        { toolCalls: [{ name: 'activate_tools', arguments: { groups: ['config'] } }] },
        { toolCalls: [{ name: 'set_model' }] },
        { content: 'done' },
      ],
    });
    await h.run('go');
    expect(h.model.calls.map((c) => c.tools.some((t) => t.function.name === 'set_model'))).toEqual([false, true, true]);
    expect(h.toolCalls()[1].status).toBe('done');
  });
});

describe('task_completed', () => {
  it('is never offered, so a call to it is refused', async () => {
    const h = new LoopHarness({
      script: [{ toolCalls: [{ name: 'task_completed', arguments: {} }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'failed',
      result: 'tool task_completed is not available to this agent',
    });
  });
});
