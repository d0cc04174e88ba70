/**
 * RulesService with a faked repository: what an admin editing rules sees (built-in rules listed
 * first and never editable, a bad pattern refused before anything is stored, a change announced),
 * and the cached rule set a check reads (Postgres asked once while it is fresh, again after a
 * change broadcast).
 */
import { ApprovalRuleInput } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { fake, newTestService } from '@skald/testing/unit';
import { RULES_MAX_AGE_MS } from '../config';
import { ApprovalEventsPublisher } from '../events/approval-events.publisher';
import { BUILT_IN_RULES } from './rule-engine';
import { RulesRepository, StoredRule } from './rules.repository';
import { RulesService } from './rules.service';

const at = new Date('2026-01-01T00:00:00Z');
const stored = (over: Partial<StoredRule> = {}): StoredRule => ({
  id: 'r1',
  ord: 1,
  name: 'rule 1',
  toolPattern: 'execute_cmd',
  pathPattern: null,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  action: 'require',
  priority: 10,
  note: null,
  isSeed: false,
  createdAt: at,
  updatedAt: at,
  ...over,
});
const input = (over: Partial<ApprovalRuleInput> = {}): ApprovalRuleInput => ({
  tool_pattern: '  read_file ',
  action: 'allow',
  priority: 5,
  ...over,
});

function setUp() {
  const t = newTestService(RulesService, [
    fake(RULES_MAX_AGE_MS, 60_000),
    fake(Bus, { subscribe: jest.fn(), onConnectionGap: jest.fn() }),
  ]);
  const repo = t.mock(RulesRepository);
  repo.version.mockResolvedValue('1');
  repo.listAll.mockResolvedValue([stored()]);
  return { ...t, repo, events: t.mock(ApprovalEventsPublisher), bus: t.mock(Bus) };
}

describe('RulesService', () => {
  it('lists the built-in rules first, read-only, then the stored ones', async () => {
    const { sut } = setUp();
    const list = await sut.list();
    expect(list.map((r) => r.id)).toEqual([...BUILT_IN_RULES.map((r) => r.id), 'r1']);
    expect(list.slice(0, BUILT_IN_RULES.length).every((r) => r.built_in === true)).toBe(true);
    expect(list.at(-1)).toMatchObject({ tool_pattern: 'execute_cmd', created_at: at.toISOString() });
  });

  it('refuses to change or delete a built-in rule, without asking Postgres', async () => {
    const { sut, repo } = setUp();
    const id = BUILT_IN_RULES[0].id;
    await expect(sut.update(id, { priority: 1 })).rejects.toMatchObject({ body: { code: 'conflict' } });
    await expect(sut.delete(id)).rejects.toThrow('built-in rule');
    expect(repo.find).not.toHaveBeenCalled();
    expect(repo.delete).not.toHaveBeenCalled();
  });

  it('refuses a rule whose pattern does not compile, naming the field, and stores nothing', async () => {
    const { sut, repo, events } = setUp();
    await expect(sut.create(input({ action: 'maybe' as never }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'action' },
    });
    expect(repo.create).not.toHaveBeenCalled();
    expect(events.rulesChanged).not.toHaveBeenCalled();
  });

  it('stores a new rule with its patterns trimmed and announces the change', async () => {
    const { sut, repo, events } = setUp();
    repo.create.mockImplementation(async (f) => stored({ ...f, id: 'r2' }));
    const dto = await sut.create(input({ path_pattern: '  ' }));
    expect(repo.create).toHaveBeenCalledWith(
      expect.objectContaining({ toolPattern: 'read_file', pathPattern: null, action: 'allow', priority: 5 }),
    );
    expect(dto).toMatchObject({ id: 'r2', tool_pattern: 'read_file' });
    expect(events.rulesChanged).toHaveBeenCalledTimes(1);
  });

  it('names a rule created without a name by what it is; a given name is kept, and a rename keeps the rest', async () => {
    const { sut, repo } = setUp();
    repo.create.mockImplementation(async (f) => stored({ ...f, id: 'r2' }));
    expect(await sut.create(input({ path_pattern: ' src/* ' }))).toMatchObject({ name: 'allow read_file on src/*' });
    expect(await sut.create(input({ note: 'reads are fine\nsecond line' }))).toMatchObject({ name: 'reads are fine' });
    expect(await sut.create(input({ name: 'reading needs nobody' }))).toMatchObject({ name: 'reading needs nobody' });
    repo.find.mockResolvedValue(stored({ name: 'old name', note: 'a note' }));
    repo.update.mockImplementation(async (id, f) => stored({ ...f, id }));
    const renamed = await sut.update('r1', { name: 'commands need a human' });
    expect(repo.update).toHaveBeenCalledWith(
      'r1',
      expect.objectContaining({ name: 'commands need a human', note: 'a note' }),
    );
    expect(renamed).toMatchObject({ name: 'commands need a human', tool_pattern: 'execute_cmd' });
    // another field's change keeps the name
    await sut.update('r1', { priority: 7 });
    expect(repo.update).toHaveBeenLastCalledWith('r1', expect.objectContaining({ name: 'old name', priority: 7 }));
  });

  it('answers not_found for a rule that is not there', async () => {
    const { sut, repo, events } = setUp();
    repo.find.mockResolvedValue(null);
    repo.delete.mockResolvedValue(false);
    await expect(sut.update('nope', { priority: 1 })).rejects.toMatchObject({ body: { code: 'not_found' } });
    await expect(sut.delete('nope')).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(events.rulesChanged).not.toHaveBeenCalled();
  });

  it('reads the rules once while the set is fresh, and again after a change broadcast', async () => {
    const { sut, repo, bus } = setUp();
    sut.onModuleInit();
    const first = await sut.ruleSet();
    expect(await sut.ruleSet()).toBe(first);
    expect(repo.listAll).toHaveBeenCalledTimes(1);
    const [, onChanged] = bus.subscribe.mock.calls[0] as unknown as [string, () => void];
    onChanged();
    const second = await sut.ruleSet();
    expect(second).not.toBe(first);
    expect(repo.listAll).toHaveBeenCalledTimes(2);
  });
});
