import { Injectable, OnModuleInit } from '@nestjs/common';
import { TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { SubmitService } from '../submit/submit.service';
import { TurnDriver } from '../turns/turn-driver';
import { SessionsService } from './sessions.service';

/** NATS edge of the session worker: parse (the Bus does), make one call. */
@Injectable()
export class SessionsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly sessions: SessionsService,
    private readonly submit: SubmitService,
    private readonly driver: TurnDriver,
  ) {}

  onModuleInit(): void {
    // The answer (and the echo the submit queued before it) is written at once, ahead of the turn.
    this.bus.handle(
      'session.submit',
      (r) =>
        this.submit.submit({
          actor: r.actor,
          source: r.source,
          clientMessageId: r.client_message_id,
          content: r.content,
          attachments: r.attachments,
          delivery: r.delivery,
          isSynthetic: r.is_synthetic,
        }),
      { replyNow: true },
    );
    this.bus.handle('session.active', async (r) => {
      const s = await this.submit.activeSession(r.actor, r.source, r.create_new);
      return { session_id: s.id, created: s.created };
    });
    this.bus.handle('session.messages', (r) => this.sessions.messages(r.actor, r.source, r.before, r.limit));
    this.bus.handle('session.get', (r) => this.sessions.detail(r.actor, r.session_id));
    this.bus.handle('session.list', (r) => this.sessions.list(r.actor, r.source, r.page, r.per_page));
    this.bus.handle('session.replay', (r) => this.sessions.replay(r.actor, r.session_id, r.after_seq));
    this.bus.handle('session.cancel', (r) => this.submit.cancel(r.actor, r.session_id));
    // Doorbells: one worker of the group tries to drive; the stop goes to every worker.
    this.bus.subscribe(
      TOPICS.sessionWake.pattern,
      TOPICS.sessionWake.message,
      (m) => this.driver.drive(m.session_id),
      'session-worker',
    );
    this.bus.subscribe(TOPICS.sessionCancel.pattern, TOPICS.sessionCancel.message, (m) => {
      this.driver.abort(m.session_id);
    });
  }
}
