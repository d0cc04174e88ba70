import { Injectable } from '@nestjs/common';
import type { Actor, JobRunContext, JobSessionStatusReply } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { ScheduledJobsRow } from '@skald/persistence';
import { AgentCatalogService } from '../agents/agent-catalog.service';
import { SessionsRepository } from '../sessions/sessions.repository';
import { SubmitService } from '../submit/submit.service';
import { DeliveryRouting } from './delivery-routing.service';
import { PARENT_GONE, type JobPolicySource } from './job-policy';
import { JobSessionsRepository } from './job-sessions.repository';

const SOURCE_OF_KIND = { cron: 'cron', tic: 'tic', async: 'task' } as const;

/**
 * What the scheduler asks of the session workers: start a job's ephemeral session, say how its
 * turn ended (read from the session's own rows), and deliver an ending into a conversation.
 */
@Injectable()
export class JobSessionsService {
  constructor(
    private readonly catalog: AgentCatalogService,
    private readonly repo: JobSessionsRepository,
    private readonly sessions: SessionsRepository,
    private readonly submit: SubmitService,
    private readonly routing: DeliveryRouting,
  ) {}

  async start(r: {
    actor: Actor;
    runId: string;
    kind: ScheduledJobsRow['kind'];
    agentId: string;
    prompt: string;
    runContext: JobRunContext;
    parentSessionId: string | null;
    scratchpadSessionId: string | null;
    client: string | null;
  }): Promise<{ session_id: string; created: boolean }> {
    // Only whether it exists: the turn builds the agent (its prompt, memory and MCP list) when it starts.
    if (!(await this.catalog.exists(r.agentId, r.actor.userId)))
      throw new RemoteError({ code: 'invalid_input', message: `unknown agent \`${r.agentId}\``, field: 'agent_id' });
    const { outcome } = await this.repo.createJobSession({
      userId: r.actor.userId,
      role: r.actor.role,
      runId: r.runId,
      source: SOURCE_OF_KIND[r.kind],
      agentId: r.agentId,
      prompt: r.prompt,
      policy: this.policySource(r),
      // Nobody is there to answer a cron or tic run: approvals are auto-denied unless its
      // RunContext allows them. An async task's approvals go to the user's inbox like any other.
      autoDeny: r.kind !== 'async' && r.runContext.allow_approvals !== true,
      // A tick is the system's prompt (spec 000: synthetic); a cron or task prompt is the user's words.
      synthetic: r.kind === 'tic',
      scratchpadSessionId: r.kind === 'async' ? r.scratchpadSessionId : null,
      clientPin: r.client,
    });
    if (outcome === 'parent_gone') throw new RemoteError({ code: 'not_found', message: PARENT_GONE });
    this.submit.wake(r.runId);
    return { session_id: r.runId, created: outcome === 'created' };
  }

  /**
   * An async task runs under its parent conversation's policy as the parent's row says now — never
   * a RunContext sent with the request, and never the default rules for want of a parent.
   */
  private policySource(r: {
    kind: ScheduledJobsRow['kind'];
    runContext: JobRunContext;
    parentSessionId: string | null;
  }): JobPolicySource {
    if (r.kind !== 'async') return { from: 'job', runContext: r.runContext };
    if (r.parentSessionId === null)
      throw new RemoteError({
        code: 'invalid_input',
        message: 'an async task names no parent conversation, whose rules it would run under',
        field: 'parent_session_id',
      });
    return { from: 'parent', parentSessionId: r.parentSessionId };
  }

  async status(actor: Actor, sessionId: string): Promise<JobSessionStatusReply> {
    const s = await this.repo.session({ userId: actor.userId, sessionId });
    if (!s) throw new RemoteError({ code: 'not_found', message: 'session not found' });
    if (s.turn_state !== 'finished' || (await this.repo.hasQueuedInput(sessionId))) {
      // Not ended; nudge it in case nobody drives it (a lost doorbell).
      if (s.turn_state === 'finished') this.submit.wake(sessionId);
      return { state: 'running' };
    }
    const last = await this.repo.lastEnding(sessionId);
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    if (!last) return { state: 'running' };
    if (last.type === 'done') return { state: 'ended', ending: 'final', final_text: text(last.payload.content) };
    const partial = await this.repo.partialOutput(sessionId);
    const code = text(last.payload.code);
    if (code === 'interrupted') return { state: 'ended', ending: 'cancelled', partial_output: partial };
    return { state: 'ended', ending: 'failed', error: text(last.payload.message) || code, partial_output: partial };
  }

  async deliver(r: {
    actor: Actor;
    deliveryId: string;
    sessionId?: string;
    source?: string;
    toolName: string;
    arguments: Record<string, unknown>;
    result: string;
  }): Promise<{ session_id: string; duplicate: boolean }> {
    let sessionId =
      r.sessionId ?? (await this.sessions.active({ userId: r.actor.userId, source: r.source ?? 'web' })).id;
    // A reset conversation's deliveries go to the home source; bounded, as that can be reset too.
    let stored: Awaited<ReturnType<JobSessionsRepository['deliver']>>['outcome'] = 'reset';
    for (let attempt = 0; attempt < 3 && stored === 'reset'; attempt++) {
      if (attempt > 0) sessionId = await this.routing.homeSession(r.actor.userId);
      stored = (
        await this.repo.deliver({
          userId: r.actor.userId,
          sessionId,
          deliveryId: r.deliveryId,
          toolName: r.toolName,
          argumentsText: JSON.stringify(r.arguments),
          result: r.result,
        })
      ).outcome;
      if (stored === 'not_found') throw new RemoteError({ code: 'not_found', message: 'session not found' });
    }
    if (stored === 'reset')
      throw new RemoteError({ code: 'conflict', message: 'the home conversation keeps being reset' });
    const duplicate = stored === 'duplicate';
    if (!duplicate) this.submit.wake(sessionId);
    return { session_id: sessionId, duplicate };
  }
}
