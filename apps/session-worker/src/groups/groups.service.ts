import { Inject, Injectable } from '@nestjs/common';
import type {
  Actor,
  BusGroup,
  CreateGroupRequest,
  GroupMembersRequest,
  GroupPolicyDto,
  PatchGroupRequest,
} from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { GroupPolicy } from './group-policy';
import { GroupPolicyRepository, type GroupPolicyReader } from './group-policy.repository';
import { GroupsRepository, type Group, type GroupStore } from './groups.repository';

export function toBusGroup(g: Group): BusGroup {
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    allowed_agents: g.allowedAgents,
    allowed_llm_clients: g.allowedLlmClients,
    security_groups: g.securityGroups,
    budget: g.budget,
    source: g.source,
    created_at: g.createdAt.toISOString(),
    members: g.members.map((m) => ({ user_id: m.userId, source: m.source })),
  };
}

export function toPolicyDto(p: GroupPolicy): GroupPolicyDto {
  const list = (s: ReadonlySet<string> | null): string[] | null => (s ? [...s].sort() : null);
  return {
    groups: p.groups,
    allowed_agents: list(p.agents),
    allowed_llm_clients: list(p.clients),
    security_groups: p.securityGroups,
  };
}

const missing = (): RemoteError => new RemoteError({ code: 'not_found', message: 'group not found' });
const taken = (): RemoteError =>
  new RemoteError({ code: 'conflict', message: 'a group with this name exists', field: 'name' });

/** Anyone but an admin is refused with `forbidden`. */
function requireAdmin(actor: Actor): void {
  if (actor.role !== 'admin') throw new RemoteError({ code: 'forbidden', message: 'only an admin manages groups' });
}

/** Groups: the admin's edits and the login's sync of the identity provider's group claim. */
@Injectable()
export class GroupsService {
  constructor(
    @Inject(GroupsRepository) private readonly store: GroupStore,
    @Inject(GroupPolicyRepository) private readonly policies: GroupPolicyReader,
  ) {}

  /** What a user's groups (their own: anyone; another user's: an admin) or one group (an admin) decide. */
  async policy(actor: Actor, of: { user_id: string } | { group_id: string }): Promise<GroupPolicyDto> {
    if ('user_id' in of) {
      if (of.user_id !== actor.userId) requireAdmin(actor);
      return toPolicyDto(await this.policies.ofUser(of.user_id));
    }
    requireAdmin(actor);
    const p = await this.policies.ofGroup(of.group_id);
    if (!p) throw missing();
    return toPolicyDto(p);
  }

  /**
   * At each sign-in through the identity provider: the actor's own 'idp' memberships become exactly
   * the groups named (matched without regard to case; a group missing is created with source 'idp';
   * an admin group of that name is joined). Admin memberships are never touched.
   */
  async syncIdp(actor: Actor, names: string[]): Promise<Record<string, never>> {
    await this.store.setIdpMemberships(actor.userId, names);
    return {};
  }

  async list(actor: Actor): Promise<{ items: BusGroup[] }> {
    requireAdmin(actor);
    return { items: (await this.store.list()).map(toBusGroup) };
  }

  async create(actor: Actor, req: CreateGroupRequest): Promise<BusGroup> {
    requireAdmin(actor);
    const g = await this.store.create({
      name: req.name,
      description: req.description,
      allowedAgents: req.allowed_agents,
      allowedLlmClients: req.allowed_llm_clients,
      securityGroups: req.security_groups,
      budget: req.budget,
    });
    if (!g) throw taken();
    return toBusGroup(g);
  }

  async update(actor: Actor, id: string, req: PatchGroupRequest): Promise<BusGroup> {
    requireAdmin(actor);
    const g = await this.store.update(id, {
      name: req.name,
      description: req.description,
      allowedAgents: req.allowed_agents,
      allowedLlmClients: req.allowed_llm_clients,
      securityGroups: req.security_groups,
      budget: req.budget,
    });
    if (g === 'missing') throw missing();
    if (g === 'taken') throw taken();
    return toBusGroup(g);
  }

  async delete(actor: Actor, id: string): Promise<Record<string, never>> {
    requireAdmin(actor);
    if (!(await this.store.delete(id))) throw missing();
    return {};
  }

  /** The user ids were checked by the gateway, which owns the users. */
  async changeMembers(actor: Actor, id: string, req: GroupMembersRequest): Promise<BusGroup> {
    requireAdmin(actor);
    if (!(await this.store.changeAdminMembers(id, req.add, req.remove))) throw missing();
    const g = await this.store.find(id);
    if (!g) throw missing();
    return toBusGroup(g);
  }
}
