import { Inject, Injectable } from '@nestjs/common';
import { RemoteError } from '@skald/messaging/bus-errors';
import { agentRefusal, allowedAgents, clientRefusal, type GroupPolicy } from './group-policy';
import { GroupPolicyRepository, type GroupPolicyReader } from './group-policy.repository';

/**
 * A user's group policy where it applies outside a turn: refusing a session with an agent they may
 * not use and a pin of a client they may not use (`forbidden`, the sentence a turn would end with),
 * and filtering what the agent and client lists show. A turn reads the same policy with its start.
 */
@Injectable()
export class GroupPolicyService {
  constructor(@Inject(GroupPolicyRepository) private readonly reader: GroupPolicyReader) {}

  of(userId: string): Promise<GroupPolicy> {
    return this.reader.ofUser(userId);
  }

  /** Refuses (`forbidden`, naming `agent_id`) an agent the user's groups do not allow. */
  async requireAgent(userId: string, agentId: string): Promise<void> {
    const refused = agentRefusal(await this.of(userId), agentId);
    if (refused) throw new RemoteError({ code: 'forbidden', message: refused.message, field: 'agent_id' });
  }

  /** Refuses (`forbidden`, naming `client`) an LLM client the user's groups do not allow. */
  async requireClient(userId: string, client: string): Promise<void> {
    const refused = clientRefusal(await this.of(userId), client);
    if (refused) throw new RemoteError({ code: 'forbidden', message: refused.message, field: 'client' });
  }

  /** The agents of the list the user may use, in its order. */
  async agents<T extends { id: string }>(userId: string, agents: readonly T[]): Promise<T[]> {
    return allowedAgents(await this.of(userId), agents);
  }
}
