import { mcpServerOf, mcpWireName } from './tool-names';

describe('MCP tool names', () => {
  it('are mcp__<server>__<tool> when that fits', () => {
    expect(mcpWireName('everything', 'get-sum')).toBe('mcp__everything__get-sum');
    expect(mcpServerOf('mcp__everything__get-sum')).toBe('everything');
  });

  it('cut a name past 64 characters and suffix 6 hex of its hash, distinct for distinct tools', () => {
    const a = mcpWireName('github', `create_${'x'.repeat(80)}_a`);
    const b = mcpWireName('github', `create_${'x'.repeat(80)}_b`);
    expect(a).toHaveLength(64);
    expect(a).toMatch(/^mcp__github__create_x+_[0-9a-f]{6}$/);
    expect(a).not.toBe(b);
    expect(mcpServerOf(a)).toBe('github');
  });

  it('replace characters the model APIs refuse, keeping names distinct', () => {
    const dotted = mcpWireName('fs', 'read.file');
    expect(dotted).toMatch(/^mcp__fs__read_file_[0-9a-f]{6}$/);
    expect(dotted).not.toBe(mcpWireName('fs', 'read_file'));
  });

  it('only an mcp__ name has a server', () => {
    expect(mcpServerOf('read_file')).toBeNull();
    expect(mcpServerOf('mcp__x')).toBeNull();
  });
});
