/**
 * CatalogService with a faked repository: the tools offered to a user's model are written once
 * (not every round), fixed tools never, a failed write is retried the next time the name is
 * offered; and a user sees their own discovered tools, an admin everyone's.
 */
import { Actor, BUILTIN_TOOLS } from '@skald/contracts';
import { newTestService } from '@skald/testing/unit';
import { CatalogService, SEEN_TTL_MS } from './catalog.service';
import { KnownToolsRepository } from './known-tools.repository';

function setUp() {
  const t = newTestService(CatalogService);
  const repo = t.mock(KnownToolsRepository);
  repo.upsert.mockResolvedValue(undefined);
  repo.list.mockResolvedValue([]);
  return { ...t, repo };
}

const builtIn = BUILTIN_TOOLS[0].name;

describe('CatalogService', () => {
  it('writes a discovered tool once within the hour, never a fixed one', async () => {
    const { sut, repo } = setUp();
    sut.offered('u1', ['mcp__gh__issues', builtIn, 'mcp__gh__issues'], 0);
    sut.offered('u1', ['mcp__gh__issues'], 1000);
    await sut.settled();
    expect(repo.upsert).toHaveBeenCalledTimes(1);
    expect(repo.upsert).toHaveBeenCalledWith('u1', [{ name: 'mcp__gh__issues', category: 'dynamic' }]);
    sut.offered('u1', ['mcp__gh__issues'], SEEN_TTL_MS + 1);
    await sut.settled();
    expect(repo.upsert).toHaveBeenCalledTimes(2);
  });

  it('keeps users apart: the same name offered to another user is written for them', async () => {
    const { sut, repo } = setUp();
    sut.offered('u1', ['mcp__x__y'], 0);
    sut.offered('u2', ['mcp__x__y'], 0);
    await sut.settled();
    expect(repo.upsert.mock.calls.map((c) => c[0])).toEqual(['u1', 'u2']);
  });

  it('retries a name whose write failed the next time it is offered', async () => {
    const { sut, repo } = setUp();
    repo.upsert.mockRejectedValueOnce(new Error('db down'));
    sut.offered('u1', ['mcp__x__y'], 0);
    await sut.settled();
    sut.offered('u1', ['mcp__x__y'], 1);
    await sut.settled();
    expect(repo.upsert).toHaveBeenCalledTimes(2);
  });

  it("lists the fixed tools and the user's own discovered ones; an admin's list spans every user", async () => {
    const { sut, repo } = setUp();
    repo.list.mockResolvedValue([
      { name: 'mcp__gh__issues', category: 'dynamic' },
      { name: builtIn, category: 'dynamic' },
    ]);
    const user: Actor = { userId: 'u1', role: 'user' };
    const list = await sut.list(user);
    expect(repo.list).toHaveBeenLastCalledWith('u1');
    expect(list.filter((t) => t.name === builtIn)).toEqual([expect.objectContaining({ origin: 'registry' })]);
    expect(list.at(-1)).toEqual({ name: 'mcp__gh__issues', category: 'dynamic', origin: 'discovered' });
    await sut.list({ userId: 'a1', role: 'admin' });
    expect(repo.list).toHaveBeenLastCalledWith(null);
  });
});
