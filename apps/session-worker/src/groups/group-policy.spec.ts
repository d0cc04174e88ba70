/**
 * What a user's groups allow, resolved at each turn's start, and how the turn's LLM port applies
 * it: an agent or a named client the groups do not allow is refused with a sentence naming it and
 * the groups (never replaced by another client); AUTO selection passes over disallowed clients.
 */
import fc from 'fast-check';
import type { LlmManager } from '@skald/llm';
import { LlmAdapter } from '../loop-adapters/llm-adapter';
import { NO_GROUPS, resolveGroupPolicy, type OwnerGroup } from './group-policy';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const g = (name: string, over: Partial<OwnerGroup> = {}): OwnerGroup => ({
  name,
  allowed_agents: null,
  allowed_llm_clients: null,
  security_groups: [],
  ...over,
});
const who = { sessionId: 's', userId: 'u', agentId: 'main', frameId: 'f' };

/** An LLM manager with `names` configured: AUTO picks the first one not tried (or the pin). */
function manager(names: string[]) {
  const asked: { pinned: string | null | undefined; tried: readonly string[] }[] = [];
  const m = {
    names: () => names,
    select: (r: { pinned?: string | null; tried: readonly string[] }) => {
      asked.push({ pinned: r.pinned, tried: r.tried });
      const open = names.filter((n) => !r.tried.includes(n));
      const name = r.pinned && open.includes(r.pinned) ? r.pinned : open[0];
      return Promise.resolve(name ? { name, cacheControl: false } : null);
    },
  };
  return { m: m as unknown as LlmManager, asked };
}

describe('resolveGroupPolicy', () => {
  it('no group: everything allowed, no security group', () => {
    expect(resolveGroupPolicy([])).toBe(NO_GROUPS);
  });

  it('unions the lists; a group allowing everything makes it everything', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            agents: fc.option(fc.array(fc.constantFrom<string>('main', 'coder', 'writer')), { nil: null }),
            clients: fc.option(fc.array(fc.constantFrom<string>('small', 'big')), { nil: null }),
            sec: fc.array(fc.constantFrom('ops', 'lab')),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        (rows) => {
          const p = resolveGroupPolicy(
            rows.map((r, i) =>
              g(`g${i}`, { allowed_agents: r.agents, allowed_llm_clients: r.clients, security_groups: r.sec }),
            ),
          );
          for (const agent of ['main', 'coder', 'writer']) {
            const allowed = rows.some((r) => r.agents === null) || rows.some((r) => r.agents!.includes(agent));
            expect(p.agents === null || p.agents.has(agent)).toBe(allowed);
          }
          for (const client of ['small', 'big']) {
            const allowed = rows.some((r) => r.clients === null) || rows.some((r) => r.clients!.includes(client));
            expect(p.clients === null || p.clients.has(client)).toBe(allowed);
          }
          expect(p.securityGroups).toEqual([...new Set(rows.flatMap((r) => r.sec))].sort());
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });
});

describe('the turn LLM port under the owner groups', () => {
  const policy = resolveGroupPolicy([
    g('Interns', { allowed_agents: ['main'], allowed_llm_clients: ['small'] }),
    g('Readers', { allowed_agents: ['main', 'writer'], allowed_llm_clients: [] }),
  ]);

  it('refuses an agent the groups do not allow, naming it and the groups', async () => {
    const { m } = manager(['small', 'big']);
    const refusal = await new LlmAdapter(m, null, null, null, policy).admit({ ...who, agentId: 'coder', pinned: null });
    expect(refusal).toEqual({
      code: 'forbidden',
      message:
        'The agent "coder" is not allowed for your groups ("Interns", "Readers"); allowed agents: "main", "writer".',
    });
  });

  it('refuses a named client the groups do not allow: never a substitution', async () => {
    const { m } = manager(['small', 'big']);
    const adapter = new LlmAdapter(m, null, null, null, policy);
    expect(await adapter.admit({ ...who, pinned: 'big' })).toEqual({
      code: 'forbidden',
      message:
        'The LLM client "big" is not allowed for your groups ("Interns", "Readers"); allowed LLM clients: "small".',
    });
    expect(await adapter.admit({ ...who, pinned: 'small' })).toBeNull();
    expect(await adapter.admit({ ...who, pinned: null })).toBeNull();
  });

  it('AUTO selection and fallback pass over disallowed clients', async () => {
    const { m, asked } = manager(['big', 'small', 'huge']);
    const adapter = new LlmAdapter(m, null, null, null, policy);
    expect(await adapter.nextClient({ agentId: 'main', pinned: null, strength: null, tried: [] })).toEqual({
      name: 'small',
      cacheControl: false,
      vision: null,
    });
    expect(await adapter.nextClient({ agentId: 'main', pinned: null, strength: null, tried: ['small'] })).toBeNull();
    expect(asked[0].tried).toEqual(['big', 'huge']);
  });

  it('no configured client allowed: refused with a clear sentence', async () => {
    const { m } = manager(['big']);
    expect(await new LlmAdapter(m, null, null, null, policy).admit({ ...who, pinned: null })).toEqual({
      code: 'forbidden',
      message:
        'No configured LLM client is allowed for your groups ("Interns", "Readers"); allowed LLM clients: "small".',
    });
  });

  it('no group: nothing refused, nothing passed over', async () => {
    const { m, asked } = manager(['big', 'small']);
    const adapter = new LlmAdapter(m, null, null, null);
    expect(await adapter.admit({ ...who, agentId: 'coder', pinned: 'big' })).toBeNull();
    await adapter.nextClient({ agentId: 'main', pinned: 'big', strength: null, tried: [] });
    expect(asked[0]).toEqual({ pinned: 'big', tried: [] });
  });
});
