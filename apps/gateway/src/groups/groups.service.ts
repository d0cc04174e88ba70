import { Injectable } from '@nestjs/common';
import {
  GroupName,
  type Actor,
  type BusGroup,
  type CreateGroupRequest,
  type GroupDto,
  type GroupMembersRequest,
  type PatchGroupRequest,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { UsersRepository } from '../auth/users.repository';
import { notFound } from '../http/api-error';

/** At most this many groups are taken from one login's claim (the rest are ignored, in claim order). */
export const IDP_GROUPS_MAX = 200;

/**
 * The names a login's group claim brings, as groups are named: each trimmed, the ones that are no
 * group name (empty, too long, a NUL, not a string) dropped, duplicates without regard to case
 * dropped (the first spelling kept), at most {@link IDP_GROUPS_MAX}.
 */
export function claimedGroupNames(claimed: readonly unknown[]): string[] {
  const seen = new Set<string>();
  const names: string[] = [];
  for (const c of claimed) {
    if (typeof c !== 'string') continue;
    const name = c.trim();
    if (!GroupName.safeParse(name).success || seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    names.push(name);
    if (names.length === IDP_GROUPS_MAX) break;
  }
  return names;
}

/**
 * Groups are the session worker's (`groups.*` on NATS); the gateway checks the user ids an admin
 * sends against its users and gives each member its email (a membership of a user that no longer
 * exists is not shown).
 */
@Injectable()
export class GroupsService {
  constructor(
    private readonly bus: Bus,
    private readonly users: UsersRepository,
  ) {}

  /**
   * At each sign-in through the identity provider, for the user who signed in (`actor`): their 'idp'
   * memberships become exactly the groups the claim names; admin memberships are never touched.
   */
  async syncIdpGroups(actor: Actor, claimedNames: readonly unknown[]): Promise<void> {
    await this.bus.call('groups.sync_idp', { actor, names: claimedGroupNames(claimedNames) });
  }

  async list(actor: Actor): Promise<GroupDto[]> {
    const { items } = await this.bus.call('groups.list', { actor });
    return this.withEmails(items);
  }

  async create(actor: Actor, group: CreateGroupRequest): Promise<GroupDto> {
    return (await this.withEmails([await this.bus.call('groups.create', { actor, group })]))[0];
  }

  async update(actor: Actor, id: string, patch: PatchGroupRequest): Promise<GroupDto> {
    return (await this.withEmails([await this.bus.call('groups.update', { actor, group_id: id, patch })]))[0];
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.bus.call('groups.delete', { actor, group_id: id });
  }

  /** Every user id is checked first: one unknown → 404 and nothing changes. */
  async changeMembers(actor: Actor, id: string, change: GroupMembersRequest): Promise<GroupDto> {
    const wanted = [...new Set([...change.add, ...change.remove])];
    const known = new Set((await this.users.findByIds(wanted)).map((u) => u.id));
    if (wanted.some((u) => !known.has(u))) throw notFound('user');
    return (await this.withEmails([await this.bus.call('groups.members', { actor, group_id: id, change })]))[0];
  }

  private async withEmails(groups: BusGroup[]): Promise<GroupDto[]> {
    const ids = [...new Set(groups.flatMap((g) => g.members.map((m) => m.user_id)))];
    const email = new Map((await this.users.findByIds(ids)).map((u) => [u.id, u.email]));
    return groups.map((g) => ({
      ...g,
      members: g.members
        .flatMap((m) => {
          const e = email.get(m.user_id);
          return e === undefined ? [] : [{ user_id: m.user_id, email: e, source: m.source }];
        })
        .sort((a, b) => a.email.toLowerCase().localeCompare(b.email.toLowerCase()) || a.source.localeCompare(b.source)),
    }));
  }
}
