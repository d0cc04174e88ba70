import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { ActionTokensService } from '../action-tokens/action-tokens.service';
import { BypassesService } from '../bypasses/bypasses.service';
import { RequestsService } from './requests.service';

/** NATS edge of human requests, the inbox and session resets. */
@Injectable()
export class RequestsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly requests: RequestsService,
    private readonly bypasses: BypassesService,
    private readonly actionTokens: ActionTokensService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('approval.register', (req) => this.requests.register(req));
    this.bus.handle('approval.resolve', (req) => this.requests.resolve(req));
    this.bus.handle('approval.get', (req) => this.requests.get(req.actor, req.request_id));
    this.bus.handle('approval.decisions', (req) => this.requests.decisions(req));
    this.bus.handle('approval.cancel_session', async (req) => ({
      cancelled: await this.requests.cancelSession(req.actor, req.session_id, req.reason),
    }));
    this.bus.handle('approval.reset_session', async (req) => ({
      revoked: await this.bypasses.revokeSession(req.actor, req.session_id),
      cancelled: await this.requests.cancelSession(req.actor, req.session_id, 'session reset'),
    }));
    this.bus.handle('approval.inbox', (req) => this.requests.inbox(req.actor));
    this.bus.handle('approval.action_token.mint', (req) => this.actionTokens.mint(req));
    this.bus.handle('approval.action.redeem', (req) => this.actionTokens.redeem(req));
  }
}
