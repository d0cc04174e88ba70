/**
 * McpService with a faked repository, launcher and bus: what a user adding or changing an MCP
 * server is told — credentials refused without the operator's key, the per-user cap, a taken name,
 * a field of the other transport — and what the model sees of a stdio server that is not running
 * (its last known tools, or the placeholder that starts it) without anything being launched.
 */
import { expect } from '@jest/globals';
import { Actor, McpServerInput } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import type { ToolContext } from '../exec/tool-context';
import { McpLauncher } from './mcp-launcher';
import { McpServersRepository, StoredMcpServer } from './mcp-servers.repository';
import { McpService } from './mcp.service';

const actor = { userId: 'u1', role: 'user' } as Actor;
const config = {
  SKALD_SECRETS_KEY: undefined,
  SKALD_MCP_ALLOW_HOSTS: '',
  SKALD_MCP_LIST_CACHE_USERS: 10,
  SKALD_MCP_LIST_CACHE_SECS: 0,
  SKALD_MCP_MAX_SERVERS: 2,
  SKALD_MCP_CALL_TIMEOUT_SECS: 5,
} as unknown as ToolRunnerConfig;

const stored = {
  id: 'id1',
  userId: 'u1',
  name: 'gh',
  enabled: true,
  secrets: null,
  status: 'stopped' as const,
  error: null,
  toolsCount: 0,
  tools: null,
  updatedAt: new Date(),
};
type StoredStdio = Extract<StoredMcpServer, { transport: 'stdio' }>;
const server = (over: Partial<Omit<StoredStdio, 'transport'>> = {}): StoredMcpServer => ({
  ...stored,
  transport: 'stdio',
  command: 'gh-mcp',
  args: [],
  network: false,
  envKeys: [],
  ...over,
});

function setUp() {
  const log = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), debug: jest.fn(), child: () => log };
  const t = newTestService(McpService, [fake(TOOL_RUNNER_CONFIG, config), fake(LOGGER, log as unknown as Logger)]);
  const repo = t.mock(McpServersRepository);
  repo.count.mockResolvedValue(0);
  repo.create.mockImplementation(async (s) => ({ ...stored, ...s }));
  return { ...t, repo, launcher: t.mock(McpLauncher) };
}

const stdio = (over: Partial<McpServerInput> = {}) =>
  ({ name: 'gh', transport: 'stdio', command: 'gh-mcp', ...over }) as McpServerInput;

describe('McpService servers', () => {
  it('stores a stdio server without starting it', async () => {
    const { sut, repo, launcher } = setUp();
    expect(await sut.create(actor, stdio())).toMatchObject({ name: 'gh', transport: 'stdio' });
    expect(repo.create).toHaveBeenCalledWith(expect.objectContaining({ userId: 'u1', secrets: null, envKeys: [] }));
    for (const m of Object.values(launcher)) expect(m).not.toHaveBeenCalled();
  });

  it('refuses credentials when the operator has not configured SKALD_SECRETS_KEY', async () => {
    const { sut, repo } = setUp();
    await expect(sut.create(actor, stdio({ env: { TOKEN: 'x' } }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'env', message: expect.stringContaining('SKALD_SECRETS_KEY') },
    });
    expect(repo.create).not.toHaveBeenCalled();
  });

  it('refuses a server past the per-user cap, and a name already taken', async () => {
    const { sut, repo } = setUp();
    repo.count.mockResolvedValueOnce(2);
    await expect(sut.create(actor, stdio())).rejects.toThrow('at most 2 MCP servers per user');
    repo.create.mockResolvedValueOnce(null);
    await expect(sut.create(actor, stdio())).rejects.toMatchObject({ body: { code: 'conflict', field: 'name' } });
  });

  it('refuses a field of the other transport in a change, naming it; an unknown server is not found', async () => {
    const { sut, repo } = setUp();
    repo.find.mockResolvedValueOnce(server());
    await expect(sut.update(actor, 'gh', { url: 'https://example.com/mcp' })).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'url', message: 'only an http server has this field' },
    });
    expect(repo.update).not.toHaveBeenCalled();
    repo.find.mockResolvedValueOnce(null);
    await expect(sut.update(actor, 'nope', { enabled: false })).rejects.toMatchObject({ body: { code: 'not_found' } });
  });
});

describe('McpService tools', () => {
  it('lists a stopped stdio server by its last known tools, or the placeholder that starts it, launching nothing', async () => {
    const { sut, repo, launcher } = setUp();
    const known = { name: 'mcp__gh__issues' } as never;
    repo.list.mockResolvedValue([
      server({ name: 'gh', tools: [known] }),
      server({ id: 'id2', name: 'fs', tools: null }),
      server({ id: 'id3', name: 'off', enabled: false }),
    ]);
    const r = await sut.catalog(actor, ['gh', 'fs', 'off']);
    expect(r.groups).toEqual(['gh', 'fs']);
    expect(r.tools[0]).toBe(known);
    expect(r.tools[1]).toMatchObject({ name: expect.stringContaining('mcp__fs__') });
    expect(r.tools).toHaveLength(2);
    for (const m of Object.values(launcher)) expect(m).not.toHaveBeenCalled();
  });

  it('refuses a call of a tool no enabled server of the user provides', async () => {
    const { sut, repo } = setUp();
    repo.list.mockResolvedValue([server({ enabled: false })]);
    const ctx = { userId: 'u1', signal: new AbortController().signal } as ToolContext;
    await expect(sut.call(ctx, 'mcp__gh__issues', {})).rejects.toMatchObject({ code: 'not_found' });
    await expect(sut.call(ctx, 'mcp__other__x', {})).rejects.toThrow(
      'no enabled MCP server of yours provides this tool',
    );
  });
});
