/**
 * JobsService (not a Nest provider: built with `new`) with a faked repository, engine and session
 * port: a cron job is refused for a schedule that fires too often, for a RunContext field only an
 * admin may set, and past the user's cap, before anything is stored; a job runs once at a time; a
 * kill stops the run's session; a user past the background-task limit is told how many run.
 */
import { Actor, CronJobInput } from '@skald/contracts';
import { automock } from '@skald/testing/unit';
import { JobEngine } from './job-engine';
import type { JobSessionsPort } from './job-ports';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';

const user = { userId: 'u1', role: 'user' } as Actor;

function setUp() {
  const jobs = automock(JobsRepository);
  const engine = automock(JobEngine);
  const sessions = { cancel: jest.fn(async () => undefined) } as unknown as jest.Mocked<JobSessionsPort>;
  const sut = new JobsService(jobs, engine, sessions, {
    minIntervalS: 300,
    maxAsyncPerUser: 2,
    maxCronPerUser: 3,
    ticCron: null,
  });
  jobs.createCronCapped.mockResolvedValue({ kind: 'created', id: 'j1' } as never);
  return { sut, jobs, engine, sessions };
}

const input = (over: Partial<CronJobInput> = {}): CronJobInput => ({
  title: 'News',
  prompt: 'check the news',
  cron: '0 8 * * *',
  ...over,
});

describe('JobsService cron jobs', () => {
  it('creates a job with its next fire time and schedules it', async () => {
    const { sut, jobs, engine } = setUp();
    expect(await sut.create(user, input())).toEqual({ id: 'j1' });
    const [row, cap] = jobs.createCronCapped.mock.calls[0];
    expect(row).toMatchObject({ userId: 'u1', agentId: 'main', timezone: 'UTC', enabled: true });
    expect(row.nextRunAt).toBeInstanceOf(Date);
    expect(cap).toBe(3);
    expect(engine.sync).toHaveBeenCalledTimes(1);
  });

  it('refuses a schedule that fires more often than the minimum interval, naming the field', async () => {
    const { sut, jobs } = setUp();
    await expect(sut.create(user, input({ cron: '* * * * *' }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'cron' },
    });
    expect(jobs.createCronCapped).not.toHaveBeenCalled();
  });

  it("refuses a user's job that sets a RunContext field only an admin may set", async () => {
    const { sut, jobs } = setUp();
    const rc = { security_group: 'ops' } as CronJobInput['run_context'];
    await expect(sut.create(user, input({ run_context: rc }))).rejects.toMatchObject({
      body: { code: 'forbidden', field: 'run_context.security_group' },
    });
    expect(jobs.createCronCapped).not.toHaveBeenCalled();
  });

  it("refuses a job past the user's cap, saying how many they have", async () => {
    const { sut, jobs, engine } = setUp();
    jobs.createCronCapped.mockResolvedValue({ kind: 'capped', have: 3 } as never);
    await expect(sut.create(user, input())).rejects.toMatchObject({ body: { code: 'rate_limited' } });
    expect(engine.sync).not.toHaveBeenCalled();
  });

  it('runs a job now only when it is not already running; another user’s job is not found', async () => {
    const { sut, jobs, engine } = setUp();
    jobs.findJob.mockResolvedValueOnce({ id: 'j1' } as never).mockResolvedValueOnce({ id: 'j1' } as never);
    engine.fire.mockResolvedValueOnce('run1').mockResolvedValueOnce(null);
    expect(await sut.runNow(user, 'j1')).toEqual({ run_id: 'run1' });
    await expect(sut.runNow(user, 'j1')).rejects.toThrow('the job is already running');
    jobs.findJob.mockResolvedValueOnce(null);
    await expect(sut.runNow(user, 'j2')).rejects.toMatchObject({ body: { code: 'not_found' } });
  });
});

describe('JobsService kill and background tasks', () => {
  it('kills the open run and cancels its session; the system tick cannot be killed', async () => {
    const { sut, jobs, sessions, engine } = setUp();
    jobs.findJob.mockResolvedValue({ id: 'j1', kind: 'cron' } as never);
    jobs.openRunOf.mockResolvedValue({ id: 'r1', session_id: 's1' } as never);
    expect(await sut.kill(user, 'j1')).toEqual({ killed: true });
    expect(jobs.requestKill).toHaveBeenCalledWith('r1');
    expect(sessions.cancel).toHaveBeenCalledWith(user, 's1');
    expect(engine.ring).toHaveBeenCalled();
    jobs.findJob.mockResolvedValue({ id: 't', kind: 'tic' } as never);
    await expect(sut.kill(user, 't')).rejects.toMatchObject({ body: { code: 'not_found' } });
  });

  it('refuses a background task past the limit, telling how many run and what to do', async () => {
    const { sut, jobs, engine } = setUp();
    jobs.createAsync.mockResolvedValue({ kind: 'capped', open: 2 } as never);
    const task = {
      idempotencyKey: 'k',
      parentSessionId: 'p',
      parentToolCallId: 'c',
      source: 'web',
      scratchpadSessionId: 'p',
      agentId: 'main',
      prompt: 'dig',
      title: null,
      description: null,
      client: null,
    };
    await expect(sut.submitAsync(user, task)).rejects.toThrow(
      'You already have 2 background tasks running (the limit is 2)',
    );
    expect(engine.enqueue).not.toHaveBeenCalled();
  });
});
