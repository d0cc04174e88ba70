import type { Bus } from '@skald/messaging/bus-port';
import { NatsMemory } from './nats-memory';
import { TurnFacts } from './turn-facts';

interface Asked {
  paths: string[];
  query: string | null;
}

/** A bus whose tool runner answers `tools.memory_turn` (or fails), recording what it was asked. */
function runner(fail = false) {
  const asked: Asked[] = [];
  const bus = {
    call: (subject: string, req: Asked) => {
      expect(subject).toBe('tools.memory_turn');
      asked.push({ paths: req.paths, query: req.query });
      if (fail) return Promise.reject(new Error('no responders'));
      return Promise.resolve({
        documents: req.paths.map((path) => ({ path, content: `content of ${path}` })),
        context: req.query === null ? null : `context of ${req.query}`,
      });
    },
  } as unknown as Bus;
  return { bus, asked };
}

describe('NatsMemory: the documents and the memory context of a turn in one request', () => {
  it('asks the expected query with the documents, then answers the context from it', async () => {
    const { bus, asked } = runner();
    const memory = new NatsMemory(bus, 'u1', 'user', new TurnFacts());
    memory.expectQuery('s1', 'What tea?');
    expect(await memory.documents(['user-memory/a.md'])).toEqual([
      { path: 'user-memory/a.md', content: 'content of user-memory/a.md' },
    ]);
    expect(await memory.queryContext('s1', 'What tea?')).toBe('context of What tea?');
    expect(asked).toEqual([{ paths: ['user-memory/a.md'], query: 'What tea?' }]);
    // A sub-agent's documents later in the turn: the documents only.
    await memory.documents(['shared-memory/b.md']);
    expect(asked.at(-1)).toEqual({ paths: ['shared-memory/b.md'], query: null });
  });

  it('asks again after a call that may have written (the facts forget), and for another text', async () => {
    const { bus, asked } = runner();
    const facts = new TurnFacts();
    const memory = new NatsMemory(bus, 'u1', 'user', facts);
    memory.expectQuery('s1', 'tea');
    await memory.documents(['user-memory/a.md']);
    facts.changed();
    expect(await memory.queryContext('s1', 'tea')).toBe('context of tea');
    expect(await memory.queryContext('s1', 'coffee')).toBe('context of coffee');
    expect(await memory.queryContext('s1', 'coffee')).toBe('context of coffee');
    expect(asked).toEqual([
      { paths: ['user-memory/a.md'], query: 'tea' },
      { paths: [], query: 'tea' },
      { paths: [], query: 'coffee' },
    ]);
  });

  it('does not ask the context twice when it is known before the documents, nor documents for no path', async () => {
    const { bus, asked } = runner();
    const memory = new NatsMemory(bus, 'u1', 'admin', new TurnFacts());
    memory.expectQuery('s1', 'tea');
    expect(await memory.documents([])).toEqual([]);
    await memory.queryContext('s1', 'tea');
    await memory.documents(['user-memory/a.md']);
    expect(asked).toEqual([
      { paths: [], query: 'tea' },
      { paths: ['user-memory/a.md'], query: null },
    ]);
  });

  it('clips the query to what the runner takes (64 KiB), in the request and the key alike', async () => {
    const { bus, asked } = runner();
    const memory = new NatsMemory(bus, 'u1', 'user', new TurnFacts());
    const huge = 'tea '.repeat(40_000);
    memory.expectQuery('s1', huge);
    await memory.documents(['user-memory/a.md']);
    expect(await memory.queryContext('s1', huge)).toBe(`context of ${huge.slice(0, 64 * 1024)}`);
    expect(asked).toHaveLength(1);
    expect(asked[0].query).toHaveLength(64 * 1024);
  });

  it('an unreachable runner: the documents fail (the catalog goes without), no context, asked once more', async () => {
    const { bus, asked } = runner(true);
    const memory = new NatsMemory(bus, 'u1', 'user', new TurnFacts());
    memory.expectQuery('s1', 'tea');
    await expect(memory.documents(['user-memory/a.md'])).rejects.toThrow('no responders');
    expect(await memory.queryContext('s1', 'tea')).toBeNull();
    expect(asked).toEqual([
      { paths: ['user-memory/a.md'], query: 'tea' },
      { paths: [], query: 'tea' },
    ]);
  });
});
