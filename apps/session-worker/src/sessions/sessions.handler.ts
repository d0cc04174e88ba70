import { randomBytes } from 'node:crypto';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { routeOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import { WORKER_INSTANCE, WORKER_LOGGER } from '../config';
import { GroupPolicyService } from '../groups/group-policy.service';
import { SubmitService } from '../submit/submit.service';
import { ResumeKick } from '../turns/resume-kick';
import { TurnDriver } from '../turns/turn-driver';
import { SessionsService } from './sessions.service';

/** NATS edge of the session worker: parse (the Bus does), make one call. */
@Injectable()
export class SessionsHandler implements OnModuleInit {
  /** This process's own submit subject's token (`session.submit.<route>`), named in the replies of submits it drives. */
  readonly route: string;

  constructor(
    private readonly bus: Bus,
    private readonly sessions: SessionsService,
    private readonly submit: SubmitService,
    private readonly driver: TurnDriver,
    private readonly kick: ResumeKick,
    private readonly policies: GroupPolicyService,
    @Inject(WORKER_INSTANCE) instance: string,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {
    this.route = routeOf(instance, randomBytes(4).toString('hex'));
  }

  onModuleInit(): void {
    // The answer (and the echo the submit queued before it) is written at once, ahead of the turn.
    // Asked in the queue group or on this worker's route alike (carry affinity: the gateway sends a
    // conversation's next submit to the worker that took its lease, named by `worker`).
    this.bus.handle(
      'session.submit',
      async (r) => {
        const { leased, ...reply } = await this.submit.submit({
          actor: r.actor,
          source: r.source,
          clientMessageId: r.client_message_id,
          content: r.content,
          attachments: r.attachments,
          delivery: r.delivery,
          isSynthetic: r.is_synthetic,
          sessionId: r.session_id,
        });
        return leased ? { ...reply, worker: this.route } : reply;
      },
      { replyNow: true, route: this.route },
    );
    this.log.info({ route: this.route }, 'answering submits on its route too');
    // An agent the owner's groups do not allow is refused here, with the sentence its turn would end with.
    this.bus.handle('session.open', async (r) => {
      await this.policies.requireAgent(r.actor.userId, r.agent_id);
      return this.submit.open({
        actor: r.actor,
        source: r.source,
        agentId: r.agent_id,
        systemPrompt: r.system_prompt,
        history: r.history,
      });
    });
    this.bus.handle('session.active', async (r) => {
      const s = await this.submit.activeSession(r.actor, r.source, r.create_new);
      return { session_id: s.id, created: s.created };
    });
    this.bus.handle('session.messages', (r) => this.sessions.messages(r.actor, r.source, r.before, r.limit));
    this.bus.handle('session.get', (r) => this.sessions.detail(r.actor, r.session_id));
    this.bus.handle('session.list', (r) => this.sessions.list(r.actor, r.source, r.page, r.per_page));
    // An admin's read of any user's conversation (the service refuses anyone else).
    this.bus.handle('session.admin.get', (r) => this.sessions.adminSummary(r.actor, r.session_id));
    this.bus.handle('session.admin.messages', (r) =>
      this.sessions.adminMessages(r.actor, r.session_id, r.before, r.limit),
    );
    this.bus.handle('session.replay', async (r) => {
      const page = await this.sessions.replay(r.actor, r.session_id, r.after_seq);
      // The user's own session (replay answered): a turn whose worker died continues now.
      void this.kick.resumed(r.session_id);
      return page;
    });
    this.bus.handle('session.cancel', (r) => this.submit.cancel(r.actor, r.session_id));
    // Doorbells: one worker of the group tries to drive; the stop goes to every worker.
    this.bus.subscribe('sessionWake', (m) => this.driver.drive(m.session_id), 'session-worker');
    this.bus.subscribe('sessionCancel', (m) => {
      this.driver.abort(m.session_id);
    });
  }
}
