import type { Actor, JobSessionStatusReply, UserPageReply, UserStandingReply } from '@skald/contracts';
import { topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import {
  HomeSourcePort,
  JobDeliveryTargetGone,
  JobEventsPort,
  JobOwnersPort,
  JobSessionsPort,
  JobStartRefused,
  PresencePort,
  UserPagesPort,
} from './job-ports';

/** The session workers over NATS (request/reply in the `session-worker` queue group). */
export class NatsJobSessions implements JobSessionsPort {
  constructor(private readonly bus: Bus) {}

  async start(r: Parameters<JobSessionsPort['start']>[0]): Promise<{ sessionId: string }> {
    try {
      const reply = await this.bus.call('session.job.start', {
        actor: r.actor,
        run_id: r.runId,
        kind: r.kind,
        agent_id: r.agentId,
        prompt: r.prompt,
        run_context: r.runContext,
        parent_session_id: r.parentSessionId,
        scratchpad_session_id: r.scratchpadSessionId,
        client: r.client,
      });
      return { sessionId: reply.session_id };
    } catch (e) {
      if (e instanceof RemoteError && e.body.code !== 'unavailable' && e.body.code !== 'internal')
        throw new JobStartRefused(e.message);
      throw e;
    }
  }

  status(actor: Actor, sessionId: string): Promise<JobSessionStatusReply> {
    return this.bus.call('session.job.status', { actor, session_id: sessionId });
  }

  async deliver(r: Parameters<JobSessionsPort['deliver']>[0]): Promise<void> {
    try {
      await this.bus.call('session.job.deliver', {
        actor: r.actor,
        delivery_id: r.deliveryId,
        session_id: r.sessionId,
        source: r.source,
        tool_name: r.toolName,
        arguments: r.arguments,
        result: r.result,
      });
    } catch (e) {
      if (e instanceof RemoteError && e.body.code === 'not_found') throw new JobDeliveryTargetGone(e.message);
      throw e;
    }
  }

  async cancel(actor: Actor, sessionId: string): Promise<void> {
    await this.bus.call('session.cancel', { actor, session_id: sessionId });
  }
}

export class NatsJobEvents implements JobEventsPort {
  constructor(private readonly bus: Bus) {}

  taskUpdate(userId: string, e: Parameters<JobEventsPort['taskUpdate']>[1]): void {
    this.bus.publish(topicOf('userEvents', userId), { type: 'task_update', ...e });
  }

  notification(userId: string, e: Parameters<JobEventsPort['notification']>[1]): void {
    this.bus.publish(topicOf('userEvents', userId), { type: 'notification', ...e });
  }
}

/**
 * The user's home source (`/sethome`, kept by the session worker); `web` when they never set one,
 * as PROTOCOL.md says, and when the session worker cannot be asked (the notification still lands).
 */
export class NatsHomeSource implements HomeSourcePort {
  constructor(private readonly bus: Bus) {}

  async homeSource(userId: string): Promise<string> {
    try {
      return (await this.bus.call('session.home_source', { actor: { userId, role: 'user' } })).source;
    } catch {
      return 'web';
    }
  }
}

/** How long a presence question may take: a turn's notice waits no longer for it. */
export const PRESENCE_TIMEOUT_MS = 2_000;

/** `user.standing`, `user.page` and `user.presence` on the gateway (the users table's and the sockets' owner). */
export class NatsJobOwners implements JobOwnersPort, UserPagesPort, PresencePort {
  constructor(private readonly bus: Bus) {}

  standing(userId: string): Promise<UserStandingReply> {
    return this.bus.call('user.standing', { user_id: userId });
  }

  page(after: string | null, limit: number): Promise<UserPageReply> {
    return this.bus.call('user.page', { after, limit });
  }

  async online(userId: string): Promise<boolean> {
    return (await this.bus.call('user.presence', { user_id: userId }, { timeoutMs: PRESENCE_TIMEOUT_MS })).online;
  }
}
