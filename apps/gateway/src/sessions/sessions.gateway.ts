import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import {
  Actor,
  ChatMessages,
  ExportFormat,
  PostMessageRequest,
  SessionDetail,
  SessionList,
  SessionSearchList,
  type WorkerCommand,
  type ReplyDataOf,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { ApiError, callService } from '../http/api-error';
import { handleSlashCommand, type SlashCommandSessions } from './slash-commands';
import { SubmitAffinity } from './submit-affinity';

type Message = z.infer<typeof PostMessageRequest>;

/**
 * The gateway's side of sessions: turns client input into NATS requests to the session workers.
 * Holds no session state, only a soft hint of which worker holds a conversation's history
 * (SubmitAffinity). With no worker answering, nothing is acknowledged (503, Retry-After).
 */
@Injectable()
export class SessionsGateway implements SlashCommandSessions {
  /** Which worker a conversation's next submit goes to first (carry affinity). */
  readonly affinity = new SubmitAffinity();

  constructor(private readonly bus: Bus) {}

  list(actor: Actor, source: string | undefined, page: number, perPage: number): Promise<SessionList> {
    return this.call(() => this.bus.call('session.list', { actor, source, page, per_page: perPage }));
  }

  detail(actor: Actor, sessionId: string): Promise<SessionDetail> {
    return this.call(() => this.bus.call('session.get', { actor, session_id: sessionId }));
  }

  async activeSession(actor: Actor, source: string): Promise<string> {
    return (await this.call(() => this.bus.call('session.active', { actor, source, create_new: false }))).session_id;
  }

  async newSession(actor: Actor, source: string): Promise<string> {
    return (await this.call(() => this.bus.call('session.active', { actor, source, create_new: true }))).session_id;
  }

  /**
   * A new conversation answered by `agentId`, made the active session of `source`. An agent the
   * caller may not use (unknown, another user's, a system agent) is 404 naming `agent_id`.
   */
  async newSessionWithAgent(actor: Actor, source: string, agentId: string): Promise<string> {
    const missing = new ApiError('not_found', `agent ${agentId} not found (GET /api/agents lists yours)`, 'agent_id');
    try {
      const agent = await this.call(() => this.bus.call('agents.get', { actor, agent_id: agentId }));
      if (agent.type === 'system') throw missing;
    } catch (e) {
      if (e instanceof RemoteError && e.body.code === 'not_found') throw missing;
      throw e;
    }
    const { session_id } = await this.call(() =>
      this.bus.call('session.open', { actor, source, agent_id: agentId, system_prompt: [], history: [] }),
    );
    await this.activate(actor, session_id);
    return session_id;
  }

  async submit(
    actor: Actor,
    source: string,
    msg: Message,
  ): Promise<
    | { message_id: string; client_message_id: string; duplicate: boolean; session_id: string }
    | { command_result: { command: string; content: string }; session_id?: string }
  > {
    if (msg.content.startsWith('/')) return handleSlashCommand(this, actor, source, msg.content);
    const request = {
      actor,
      source,
      client_message_id: msg.client_message_id,
      content: msg.content,
      attachments: msg.attachments,
      delivery: msg.delivery,
    };
    const r = await this.call(() =>
      this.affinity.submit(actor.userId, source, (to) => this.bus.call('session.submit', request, { to })),
    );
    return {
      message_id: r.message_id,
      client_message_id: r.client_message_id,
      duplicate: r.duplicate,
      session_id: r.session_id,
    };
  }

  messages(actor: Actor, source: string, before: string | undefined, limit: number): Promise<ChatMessages> {
    return this.call(() => this.bus.call('session.messages', { actor, source, before, limit }));
  }

  async cancel(actor: Actor, sessionId: string): Promise<{ cancelled: boolean }> {
    return this.call(() => this.bus.call('session.cancel', { actor, session_id: sessionId }));
  }

  async cancelActive(actor: Actor, source: string): Promise<{ cancelled: boolean }> {
    return this.cancel(actor, await this.activeSession(actor, source));
  }

  /** A slash command the session worker answers (/context, /compact, /resettools, /clear, /sethome). */
  workerCommand(actor: Actor, source: string, command: WorkerCommand, args: string) {
    return this.call(() => this.bus.call('session.command', { actor, source, command, args }));
  }

  async replay(actor: Actor, sessionId: string, afterSeq: number | undefined) {
    return this.call(() => this.bus.call('session.replay', { actor, session_id: sessionId, after_seq: afterSeq }));
  }

  /** `/models`, `/model`, `/cost`: answered by a session worker as text. */
  async llmCommand(actor: Actor, source: string, command: '/models' | '/model' | '/cost', args: string) {
    return (await this.call(() => this.bus.call('llm.command', { actor, source, command, args }))).content;
  }

  rename(actor: Actor, sessionId: string, title: string): Promise<{ id: string; title: string }> {
    return this.call(() => this.bus.call('session.rename', { actor, session_id: sessionId, title }));
  }

  delete(actor: Actor, sessionId: string): Promise<{ deleted: boolean }> {
    return this.call(() => this.bus.call('session.delete', { actor, session_id: sessionId }));
  }

  search(
    actor: Actor,
    q: string,
    source: string | undefined,
    page: number,
    perPage: number,
  ): Promise<SessionSearchList> {
    return this.call(() => this.bus.call('session.search', { actor, q, source, page, per_page: perPage }));
  }

  export(actor: Actor, sessionId: string, format: ExportFormat): Promise<ReplyDataOf<'session.export'>> {
    return this.call(() => this.bus.call('session.export', { actor, session_id: sessionId, format }));
  }

  activate(actor: Actor, sessionId: string): Promise<{ session_id: string; source: string }> {
    return this.call(() => this.bus.call('session.activate', { actor, session_id: sessionId }));
  }

  /** Regenerate (no `message_id`) or edit-and-resend in the source's active session. */
  rewind(
    actor: Actor,
    source: string,
    r: { client_message_id: string; message_id?: string; content?: string },
  ): Promise<{ session_id: string; message_id: string; client_message_id: string; duplicate: boolean }> {
    return this.call(() =>
      this.bus.call('session.rewind', {
        actor,
        source,
        client_message_id: r.client_message_id,
        message_id: r.message_id,
        content: r.content,
      }),
    );
  }

  /** No worker answering → 503 with Retry-After; the client retries with the same ids. */
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('no session worker is available; retry shortly', fn);
  }
}
