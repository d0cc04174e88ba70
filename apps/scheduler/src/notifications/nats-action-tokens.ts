import type { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { ActionTokenPort, MintResult } from './channels/push.channel';

/** Action tokens from the approval service (`approval.action_token.mint`, which only the scheduler may call). */
export class NatsActionTokens implements ActionTokenPort {
  constructor(private readonly bus: Bus) {}

  async mint(requestId: string, userId: string): Promise<MintResult> {
    try {
      const r = await this.bus.call('approval.action_token.mint', { request_id: requestId, user_id: userId });
      return { kind: 'minted', token: r.token };
    } catch (e) {
      if (e instanceof RemoteError && (e.body.code === 'not_found' || e.body.code === 'conflict'))
        return { kind: 'gone', reason: `no push for this approval: ${e.message}` };
      throw e;
    }
  }
}
