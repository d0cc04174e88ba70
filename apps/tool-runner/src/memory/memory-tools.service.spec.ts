/**
 * MemoryToolsService with an in-memory document store in place of Postgres: what the model reads
 * back from the memory file tools — shared memory written only from an admin's session, a
 * document past 1 MiB refused, an edit of a missing document not found, a write approved on a
 * preview of another version refused, and a turn's memory context kept short and best first.
 */
import { newTestService } from '@skald/testing/unit';
import { contentHash } from '../files/content-hash';
import type { ToolContext } from '../exec/tool-context';
import { MEMORY_DOC_MAX_BYTES, MemoryToolsService } from './memory-tools.service';
import { MemoryRepository } from './memory.repository';
import { tp } from '../testing-fixtures/workspace-fixture';

const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
  userId: 'u1',
  role: 'user',
  sessionId: 's1',
  toolCallId: 'c1',
  workdir: '/workspace',
  signal: new AbortController().signal,
  ...over,
});

function setUp() {
  const t = newTestService(MemoryToolsService);
  const docs = new Map<string, string>();
  const key = (k: { userId: string; scope: string; key: string }) =>
    `${k.scope === 'shared' ? '*' : k.userId}:${k.scope}:${k.key}`;
  const repo = t.mock(MemoryRepository);
  repo.get.mockImplementation(async (k) => docs.get(key(k)) ?? null);
  repo.modify.mockImplementation(async (k, _actor, compute) => {
    const out = compute(docs.get(key(k)) ?? null);
    docs.set(key(k), out.content);
    return out;
  });
  return { ...t, repo, docs };
}

describe('MemoryToolsService writes', () => {
  it('creates and then edits a user document, saying what it did', async () => {
    const { sut } = setUp();
    expect(await sut.writeFile(ctx(), { path: tp('user-memory/notes.md'), content: 'a b' })).toEqual({
      result: 'Created user-memory/notes.md (3 bytes)',
      fileChanged: 'user-memory/notes.md',
    });
    await sut.editFile(ctx(), { path: 'user-memory/notes.md', old: 'b', new: 'c' } as never);
    expect((await sut.readFile(ctx(), { path: tp('user-memory/notes.md') })).result).toContain('a c');
  });

  it('writes shared memory only from an admin session', async () => {
    const { sut, repo } = setUp();
    await expect(sut.writeFile(ctx(), { path: tp('shared-memory/team.md'), content: 'x' })).rejects.toThrow(
      "shared-memory/team.md is read-only here: shared-memory/ is written only from an admin's session",
    );
    expect(repo.modify).not.toHaveBeenCalled();
    await expect(
      sut.writeFile(ctx({ role: 'admin' }), { path: tp('shared-memory/team.md'), content: 'x' }),
    ).resolves.toMatchObject({ fileChanged: 'shared-memory/team.md' });
  });

  it('refuses a document past 1 MiB, and an edit of a document that does not exist', async () => {
    const { sut, docs } = setUp();
    const big = 'x'.repeat(MEMORY_DOC_MAX_BYTES + 1);
    await expect(sut.writeFile(ctx(), { path: tp('user-memory/big.md'), content: big })).rejects.toMatchObject({
      code: 'too_large',
    });
    await expect(
      sut.editFile(ctx(), { path: 'user-memory/none.md', old: 'a', new: 'b' } as never),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect(docs.size).toBe(0);
  });

  it('refuses a write approved on a preview of another version of the document', async () => {
    const { sut, docs } = setUp();
    docs.set('u1:user:notes.md', 'now');
    const stale = ctx({ expectedBaseHash: contentHash('before') });
    await expect(sut.writeFile(stale, { path: tp('user-memory/notes.md'), content: 'x' })).rejects.toThrow();
    expect(docs.get('u1:user:notes.md')).toBe('now');
    const fresh = ctx({ expectedBaseHash: contentHash('now') });
    await sut.writeFile(fresh, { path: tp('user-memory/notes.md'), content: 'x' });
    expect(docs.get('u1:user:notes.md')).toBe('x');
  });

  it('reads a directory as an error naming it, not as a document', async () => {
    const { sut } = setUp();
    await expect(sut.readFile(ctx(), { path: tp('user-memory') })).rejects.toMatchObject({ code: 'not_a_file' });
  });
});

describe('MemoryToolsService search and turn context', () => {
  it('answers a search without hits in words, and ranks hits with one-line snippets', async () => {
    const { sut, repo } = setUp();
    repo.search.mockResolvedValueOnce([]);
    expect((await sut.search(ctx(), 'keys')).result).toBe('No memory documents match "keys".');
    repo.search.mockResolvedValueOnce([{ scope: 'user', path: 'keys.md', snippet: 'rotate\n  monthly' }] as never);
    expect((await sut.search(ctx(), 'keys')).result).toContain('user-memory/keys.md\n  rotate monthly');
  });

  it("builds a turn's memory: named documents in order (null when missing or not memory), context short", async () => {
    const { sut, repo } = setUp();
    repo.documentsAndSearch.mockResolvedValue({
      contents: ['profile'],
      hits: [
        { scope: 'user', path: 'a.md', snippet: 'first' },
        { scope: 'shared', path: 'b.md', snippet: 'x'.repeat(500) },
      ],
    } as never);
    const r = await sut.forTurn('u1', ['user-memory/profile.md', 'not-memory.txt'], 'hello', 120);
    expect(r.documents).toEqual([
      { path: 'user-memory/profile.md', content: 'profile' },
      { path: 'not-memory.txt', content: null },
    ]);
    expect(r.context).toMatch(/^Memory documents that may be relevant/);
    expect(r.context).toContain('user-memory/a.md: first');
    expect(r.context).not.toContain('shared-memory/b.md');
  });

  it('asks nothing of the store for a turn without memory files or a message', async () => {
    const { sut, repo } = setUp();
    expect(await sut.forTurn('u1', [], '  ')).toEqual({ documents: [], context: null });
    expect(repo.documentsAndSearch).not.toHaveBeenCalled();
  });
});
