import { randomUUID } from 'node:crypto';
import { NO_BUDGET_LIMITS } from '@skald/contracts';
import { resolveGroupPolicy, type GroupPolicy } from './group-policy';
import type { GroupPolicyReader } from './group-policy.repository';
import type { Group, GroupFields, GroupStore } from './groups.repository';

type Row = Omit<Group, 'members'>;
type Member = { groupId: string; userId: string; source: 'admin' | 'idp' };

/** The tables as {@link GroupStore} sees them, in memory: for unit specs (the SQL's own spec is the repository's). */
export class InMemoryGroupStore implements GroupStore, GroupPolicyReader {
  readonly groups: Row[] = [];
  readonly members: Member[] = [];
  private taken(name: string, except?: string): boolean {
    return this.groups.some((g) => g.id !== except && g.name.toLowerCase() === name.toLowerCase());
  }

  private view(g: Row): Group {
    const members = this.members.filter((m) => m.groupId === g.id).map((m) => ({ userId: m.userId, source: m.source }));
    return { ...g, members };
  }

  private owned(g: Row) {
    return {
      name: g.name,
      allowed_agents: g.allowedAgents,
      allowed_llm_clients: g.allowedLlmClients,
      security_groups: g.securityGroups,
    };
  }

  ofUser(userId: string): Promise<GroupPolicy> {
    const ids = new Set(this.members.filter((m) => m.userId === userId).map((m) => m.groupId));
    return Promise.resolve(resolveGroupPolicy(this.groups.filter((g) => ids.has(g.id)).map((g) => this.owned(g))));
  }

  ofGroup(groupId: string): Promise<GroupPolicy | null> {
    const g = this.groups.find((x) => x.id === groupId);
    return Promise.resolve(g ? resolveGroupPolicy([this.owned(g)]) : null);
  }

  list(): Promise<Group[]> {
    return Promise.resolve(this.groups.map((g) => this.view(g)));
  }

  find(id: string): Promise<Group | null> {
    const g = this.groups.find((x) => x.id === id);
    return Promise.resolve(g ? this.view(g) : null);
  }

  create(f: GroupFields): Promise<Group | null> {
    if (this.taken(f.name)) return Promise.resolve(null);
    const g: Row = { id: randomUUID(), ...f, source: 'admin', createdAt: new Date() };
    this.groups.push(g);
    return Promise.resolve(this.view(g));
  }

  update(id: string, patch: Partial<GroupFields>): Promise<Group | 'missing' | 'taken'> {
    const g = this.groups.find((x) => x.id === id);
    if (!g) return Promise.resolve('missing');
    if (patch.name !== undefined && this.taken(patch.name, id)) return Promise.resolve('taken');
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) Object.assign(g, { [k]: v });
    return Promise.resolve(this.view(g));
  }

  delete(id: string): Promise<boolean> {
    const i = this.groups.findIndex((x) => x.id === id);
    if (i < 0) return Promise.resolve(false);
    this.groups.splice(i, 1);
    this.drop((m) => m.groupId === id);
    return Promise.resolve(true);
  }

  changeAdminMembers(groupId: string, add: string[], remove: string[]): Promise<boolean> {
    if (!this.groups.some((g) => g.id === groupId)) return Promise.resolve(false);
    this.drop((m) => m.groupId === groupId && m.source === 'admin' && remove.includes(m.userId));
    for (const u of add) this.addMember({ groupId, userId: u, source: 'admin' });
    return Promise.resolve(true);
  }

  setIdpMemberships(userId: string, names: string[]): Promise<void> {
    for (const n of names)
      if (!this.taken(n))
        this.groups.push({
          id: randomUUID(),
          name: n,
          description: '',
          allowedAgents: null,
          allowedLlmClients: null,
          securityGroups: [],
          budget: { ...NO_BUDGET_LIMITS },
          source: 'idp',
          createdAt: new Date(),
        });
    const lower = new Set(names.map((n) => n.toLowerCase()));
    const ids = this.groups.filter((g) => lower.has(g.name.toLowerCase())).map((g) => g.id);
    this.drop((m) => m.userId === userId && m.source === 'idp' && !ids.includes(m.groupId));
    for (const groupId of ids) this.addMember({ groupId, userId, source: 'idp' });
    return Promise.resolve();
  }

  private addMember(m: Member): void {
    if (!this.members.some((x) => x.groupId === m.groupId && x.userId === m.userId && x.source === m.source))
      this.members.push(m);
  }

  private drop(pred: (m: Member) => boolean): void {
    for (let i = this.members.length - 1; i >= 0; i--) if (pred(this.members[i])) this.members.splice(i, 1);
  }
}
