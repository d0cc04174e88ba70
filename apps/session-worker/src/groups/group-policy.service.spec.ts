/**
 * GroupPolicyService over the in-memory tables: a session with an agent the user's groups do not
 * allow and a pin of a client they do not allow are refused with `forbidden` and the sentence a turn
 * on them would end with; the lists keep only what the groups allow; a user in no group may use all.
 */
import { NO_BUDGET_LIMITS } from '@skald/contracts';
import { GroupPolicyService } from './group-policy.service';
import { InMemoryGroupStore } from './in-memory-group-store';

const U = 'a0000000-0000-4000-8000-000000000001';
const FREE = 'a0000000-0000-4000-8000-000000000002';

async function setUp() {
  const store = new InMemoryGroupStore();
  const g = await store.create({
    name: 'Interns',
    description: '',
    allowedAgents: ['main'],
    allowedLlmClients: ['small'],
    securityGroups: ['sg-interns'],
    budget: NO_BUDGET_LIMITS,
  });
  await store.changeAdminMembers(g!.id, [U], []);
  return new GroupPolicyService(store);
}

describe('GroupPolicyService', () => {
  it('refuses an agent the groups do not allow, naming it, the groups and what is allowed', async () => {
    const svc = await setUp();
    await expect(svc.requireAgent(U, 'researcher')).rejects.toMatchObject({
      body: {
        code: 'forbidden',
        field: 'agent_id',
        message: 'The agent "researcher" is not allowed for your groups ("Interns"); allowed agents: "main".',
      },
    });
    await expect(svc.requireAgent(U, 'main')).resolves.toBeUndefined();
    await expect(svc.requireAgent(FREE, 'researcher')).resolves.toBeUndefined();
  });

  it('refuses a client the groups do not allow, naming it', async () => {
    const svc = await setUp();
    await expect(svc.requireClient(U, 'big')).rejects.toMatchObject({
      body: {
        code: 'forbidden',
        field: 'client',
        message: 'The LLM client "big" is not allowed for your groups ("Interns"); allowed LLM clients: "small".',
      },
    });
    await expect(svc.requireClient(U, 'small')).resolves.toBeUndefined();
    await expect(svc.requireClient(FREE, 'big')).resolves.toBeUndefined();
  });

  it('keeps the allowed agents of a list, in its order', async () => {
    const svc = await setUp();
    const list = [{ id: 'researcher' }, { id: 'main' }];
    expect(await svc.agents(U, list)).toEqual([{ id: 'main' }]);
    expect(await svc.agents(FREE, list)).toEqual(list);
  });
});
