import { toolLabel } from './tool-label';

describe('toolLabel', () => {
  it('names what a web tool reads or searches for, shortened in the short label', () => {
    expect(toolLabel('web_fetch', { url: 'https://example.com/v5' })).toEqual({
      short: 'web_fetch https://example.com/v5',
      full: 'web_fetch https://example.com/v5',
    });
    const query = 'what changed in version 5 of the library we use for streaming responses';
    const label = toolLabel('web_search', { query });
    expect(label.full).toBe(`web_search "${query}"`);
    expect(label.short).toHaveLength(60);
    expect(label.short.endsWith('...')).toBe(true);
  });

  it('keeps the other labels', () => {
    expect(toolLabel('execute_cmd', { command: 'ls' }).short).toBe('$ ls');
    expect(toolLabel('read_file', { path: 'a.txt' })).toEqual({
      short: 'read_file a.txt',
      full: 'read_file a.txt',
      path: 'a.txt',
    });
    expect(toolLabel('web_fetch', { url: 42 }).short).toBe('web_fetch');
  });
});
