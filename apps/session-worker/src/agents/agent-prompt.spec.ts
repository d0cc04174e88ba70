import path from 'node:path';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { loadAgentFiles } from './agent-files';
import { renderAgentList, renderMcpList, resolveDirectives, staticPrompt } from './agent-prompt';

const REPO_AGENTS = path.resolve(__dirname, '../../../../agents');
const fragments = new Map([
  ['base', 'BASE <!-- include: inner -->'],
  ['inner', 'INNER'],
  ['loop', '<!-- include: loop -->'],
]);

describe('AGENT.md directives', () => {
  it('includes fragments (nested), and turns the agents and MCP directives into sentinels', () => {
    expect(resolveDirectives('A\n<!-- include: base -->\n<!--agents-->\n<!-- mcp -->', fragments)).toBe(
      'A\nBASE INNER\n__AGENTS__\n__MCP_SERVERS__',
    );
    expect(resolveDirectives('<!-- a plain comment --> stays', fragments)).toBe('<!-- a plain comment --> stays');
  });

  it('names an unknown fragment and refuses a loop', () => {
    expect(() => resolveDirectives('<!-- include: nope -->', fragments)).toThrow(
      'unknown fragment "nope" in <!-- include: nope --> (known: base, inner, loop)',
    );
    expect(() => resolveDirectives('<!-- include: loop -->', fragments)).toThrow(/loop → loop/);
  });

  it('assembles AGENT.md, then the memory documents that exist, then the MCP list when AGENT.md did not place it', () => {
    const servers = [{ name: 'github', description: 'Issues and PRs', toolsCount: 12 }];
    const memory = [
      { path: 'user-memory/profile.md', content: 'Name: Ada\n' },
      { path: 'shared-memory/team.md', content: null },
    ];
    expect(staticPrompt({ agentMd: 'You are X.\n', fragments, memory, mcpServers: servers })).toBe(
      [
        'You are X.',
        'The following memory documents are part of your instructions:\n\n<memory path="user-memory/profile.md">\nName: Ada\n</memory>',
        'MCP servers:\n__MCP_SERVERS__',
      ].join('\n\n'),
    );
    expect(staticPrompt({ agentMd: 'MCP: <!-- mcp -->', fragments, memory: [], mcpServers: servers })).toBe(
      'MCP: __MCP_SERVERS__',
    );
    expect(staticPrompt({ agentMd: 'X', fragments, memory: [], mcpServers: [] })).toBe('X');
  });

  it('renders the lists, and says so when they are empty', () => {
    expect(renderAgentList([{ id: 'researcher', name: 'Researcher', description: 'Finds facts.' }])).toBe(
      '- `researcher` — Researcher: Finds facts.',
    );
    expect(renderAgentList([])).toBe('(no task agents are available)');
    expect(renderMcpList([])).toBe('(no MCP servers are configured)');
  });
});

describe('the agents in the repository', () => {
  it('load: main is the chat agent, tic the system agent, and the task agents are there', () => {
    const files = loadAgentFiles(REPO_AGENTS);
    const types = Object.fromEntries([...files.agents.values()].map((a) => [a.id, a.meta.type]));
    expect(types).toEqual({
      'code-explorer': 'task',
      generalist: 'task',
      main: 'chat',
      researcher: 'task',
      'software-engineer': 'task',
      tic: 'system',
    });
    for (const a of files.agents.values()) {
      const text = resolveDirectives(a.prompt, files.fragments);
      expect(text).not.toMatch(/<!--\s*(include|agents|mcp)/);
      expect(text.length).toBeGreaterThan(500);
    }
    expect(resolveDirectives(files.agents.get('main')!.prompt, files.fragments)).toContain('__AGENTS__');
  });

  it('a broken agent stops the start with the file and the field named', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agents-'));
    mkdirSync(path.join(dir, 'main'));
    writeFileSync(path.join(dir, 'main', 'AGENT.md'), 'hi');
    writeFileSync(path.join(dir, 'main', 'meta.json'), JSON.stringify({ name: 'M', type: 'boss' }));
    expect(() => loadAgentFiles(dir)).toThrow(`${path.join(dir, 'main', 'meta.json')}: type:`);
    writeFileSync(path.join(dir, 'main', 'meta.json'), JSON.stringify({ name: 'M', type: 'chat' }));
    writeFileSync(path.join(dir, 'main', 'AGENT.md'), '<!-- include: missing -->');
    expect(() => loadAgentFiles(dir)).toThrow(/AGENT\.md: unknown fragment "missing"/);
    expect(() => loadAgentFiles(path.join(dir, 'nope'))).toThrow(/agents directory not found/);
  });
});
