import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { GroupsService } from './groups.service';

/** NATS edge of the groups (the gateway's admin routes, the login's sync): parse (the Bus does), make one call. */
@Injectable()
export class GroupsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly groups: GroupsService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('groups.list', (r) => this.groups.list(r.actor));
    this.bus.handle('groups.create', (r) => this.groups.create(r.actor, r.group));
    this.bus.handle('groups.update', (r) => this.groups.update(r.actor, r.group_id, r.patch));
    this.bus.handle('groups.delete', (r) => this.groups.delete(r.actor, r.group_id));
    this.bus.handle('groups.members', (r) => this.groups.changeMembers(r.actor, r.group_id, r.change));
    this.bus.handle('groups.sync_idp', (r) => this.groups.syncIdp(r.actor, r.names));
    this.bus.handle('groups.policy', (r) => this.groups.policy(r.actor, r));
  }
}
