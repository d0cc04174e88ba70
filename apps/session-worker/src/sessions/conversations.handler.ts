import { Injectable, OnModuleInit } from '@nestjs/common';

import { Bus } from '@skald/messaging/bus-port';
import { RewindService } from '../submit/rewind.service';
import { ConversationTitlesService } from './conversation-titles.service';
import { ConversationsService } from './conversations.service';

/** NATS edge of conversations (rename, delete, search, export, reopen, regenerate/edit) and of titles. */
@Injectable()
export class ConversationsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly conversations: ConversationsService,
    private readonly rewinds: RewindService,
    private readonly titles: ConversationTitlesService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('session.rename', (r) => this.conversations.rename(r.actor, r.session_id, r.title));
    this.bus.handle('session.delete', (r) => this.conversations.delete(r.actor, r.session_id));
    this.bus.handle('session.search', (r) => this.conversations.search(r.actor, r.q, r.source, r.page, r.per_page));
    this.bus.handle('session.export', (r) => this.conversations.export(r.actor, r.session_id, r.format));
    this.bus.handle('session.activate', (r) => this.conversations.activate(r.actor, r.session_id));
    this.bus.handle('session.rewind', (r) =>
      this.rewinds.rewind({
        actor: r.actor,
        source: r.source,
        clientMessageId: r.client_message_id,
        messageId: r.message_id,
        content: r.content,
      }),
    );
    if (this.titles.enabled)
      this.bus.subscribe('sessionTurnEnded', (m) => this.titles.onTurnEnded(m.session_id), 'session-worker-titles');
  }
}
