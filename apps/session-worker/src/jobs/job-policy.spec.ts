import type { AgentCatalogService } from '../agents/agent-catalog.service';
import type { SessionsRepository } from '../sessions/sessions.repository';
import type { SubmitService } from '../submit/submit.service';
import type { DeliveryRouting } from './delivery-routing.service';
import { inheritedPolicy, PARENT_GONE, policyOfJob } from './job-policy';
import type { JobSessionsRepository } from './job-sessions.repository';
import { JobSessionsService } from './job-sessions.service';

type CreateArgs = Parameters<JobSessionsRepository['createJobSession']>[0];

/** The repository as the service sees it: records what it was asked, answers as told. */
function harness(outcome: 'created' | 'exists' | 'parent_gone' = 'created') {
  const asked: CreateArgs[] = [];
  const woken: string[] = [];
  const repo = {
    createJobSession: (o: CreateArgs) => {
      asked.push(o);
      return Promise.resolve({ outcome });
    },
  } as unknown as JobSessionsRepository;
  const catalog = { exists: () => Promise.resolve(true) } as unknown as AgentCatalogService;
  const submit = { wake: (id: string) => void woken.push(id) } as unknown as SubmitService;
  const service = new JobSessionsService(
    catalog,
    repo,
    null as unknown as SessionsRepository,
    submit,
    null as unknown as DeliveryRouting,
  );
  return { service, asked, woken };
}

const start = (
  service: JobSessionsService,
  o: Partial<Parameters<JobSessionsService['start']>[0]> & Pick<Parameters<JobSessionsService['start']>[0], 'kind'>,
) =>
  service.start({
    actor: { userId: 'u1', role: 'user' },
    runId: 'r1',
    agentId: 'generalist',
    prompt: 'p',
    runContext: {},
    parentSessionId: null,
    scratchpadSessionId: null,
    client: null,
    ...o,
  });

describe("an async task's policy is its parent's", () => {
  it('the parent row gives the group, the working directory and the pre-authorised paths; not its prompt parts', () => {
    expect(
      inheritedPolicy({
        security_group: 'locked',
        run_context: {
          working_directory: '/workspace/proj',
          system_prompt: ['Answer in French.'],
          allow_fs_reads: ['/workspace/proj/docs'],
          allow_fs_writes: ['/workspace/proj/out'],
        },
      }),
    ).toEqual({
      securityGroup: 'locked',
      runContext: {
        working_directory: '/workspace/proj',
        allow_fs_reads: ['/workspace/proj/docs'],
        allow_fs_writes: ['/workspace/proj/out'],
      },
    });
  });

  it('a parent with no policy gives none; a malformed stored value counts as unset', () => {
    expect(inheritedPolicy({ security_group: null, run_context: {} })).toEqual({ securityGroup: null, runContext: {} });
    expect(
      inheritedPolicy({
        security_group: '',
        run_context: { working_directory: 7, allow_fs_reads: 'x', allow_fs_writes: [1, '/workspace/w'] },
      }),
    ).toEqual({ securityGroup: null, runContext: { allow_fs_writes: ['/workspace/w'] } });
    expect(inheritedPolicy({ security_group: 'g', run_context: null })).toEqual({ securityGroup: 'g', runContext: {} });
  });

  it("a cron or tic run keeps its job's RunContext", () => {
    expect(policyOfJob({ security_group: 'ops', working_directory: '/workspace/a', allow_approvals: true })).toEqual({
      securityGroup: 'ops',
      runContext: { working_directory: '/workspace/a' },
    });
  });

  it('the start of an async task reads its parent, never the RunContext the request carries', async () => {
    const h = harness();
    await start(h.service, {
      kind: 'async',
      parentSessionId: 'p1',
      runContext: { security_group: 'open', allow_fs_writes: ['/workspace'] },
    });
    expect(h.asked.map((a) => a.policy)).toEqual([{ from: 'parent', parentSessionId: 'p1' }]);
    expect(h.woken).toEqual(['r1']);
  });

  it('an async task without a parent is refused, and nothing is created', async () => {
    const h = harness();
    await expect(start(h.service, { kind: 'async' })).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'parent_session_id' },
    });
    expect(h.asked).toEqual([]);
    expect(h.woken).toEqual([]);
  });

  it('a parent that is gone: refused with the reason the user reads, nothing woken', async () => {
    const h = harness('parent_gone');
    await expect(start(h.service, { kind: 'async', parentSessionId: 'p1' })).rejects.toMatchObject({
      body: { code: 'not_found', message: PARENT_GONE },
    });
    expect(h.woken).toEqual([]);
  });

  it('a start asked again finds its session (created: false), and a cron run uses its own RunContext', async () => {
    const again = harness('exists');
    expect(await start(again.service, { kind: 'async', parentSessionId: 'p1' })).toEqual({
      session_id: 'r1',
      created: false,
    });
    const cron = harness();
    await start(cron.service, { kind: 'cron', runContext: { security_group: 'ops' }, parentSessionId: 'p1' });
    expect(cron.asked.map((a) => a.policy)).toEqual([{ from: 'job', runContext: { security_group: 'ops' } }]);
  });
});
