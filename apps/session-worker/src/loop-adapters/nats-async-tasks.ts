import type { AsyncTaskPort } from '@skald/agent-loop';
import { Bus } from '@skald/messaging/bus-port';
import type { Role } from '@skald/contracts';

/** `execute_task` mode async → a durable job in the scheduler (idempotent by the tool call id). */
export class NatsAsyncTasks implements AsyncTaskPort {
  constructor(
    private readonly bus: Bus,
    private readonly role: Role,
  ) {}

  async submitAsync(r: Parameters<AsyncTaskPort['submitAsync']>[0]): Promise<{ jobId: string }> {
    const reply = await this.bus.call('tasks.submit_async', {
      actor: { userId: r.userId, role: this.role },
      idempotency_key: r.idempotencyKey,
      parent_session_id: r.sessionId,
      parent_tool_call_id: r.parentToolCallId,
      source: r.source,
      scratchpad_session_id: r.scratchpadSessionId,
      agent_id: r.agentId,
      prompt: r.prompt,
      title: r.title,
      description: r.description,
      client: r.client,
    });
    return { jobId: reply.job_id };
  }
}
