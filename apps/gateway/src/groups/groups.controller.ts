import { Body, Controller, Param } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { notFound } from '../http/api-error';
import { Route } from '../http/route.decorator';
import { validate } from '../http/validate';
import { GroupsService } from './groups.service';

/** A group id from the path: not a UUID → 404, like an id that names no group. */
const groupId = (id: string): string => {
  if (!Id.safeParse(id).success) throw notFound('group');
  return id;
};

/** Admin console: groups, the session worker's (every route admin-only, enforced by `@Route` and by the worker). */
@Controller()
export class GroupsController {
  constructor(private readonly groups: GroupsService) {}

  @Route(ROUTES.listGroups)
  async list(@CurrentActor() actor: Actor) {
    return { items: await this.groups.list(actor) };
  }

  @Route(ROUTES.createGroup)
  create(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.groups.create(actor, validate(ROUTES.createGroup.body, body));
  }

  @Route(ROUTES.updateGroup)
  update(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.groups.update(actor, groupId(id), validate(ROUTES.updateGroup.body, body));
  }

  @Route(ROUTES.deleteGroup)
  async delete(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    await this.groups.delete(actor, groupId(id));
  }

  @Route(ROUTES.changeGroupMembers)
  changeMembers(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.groups.changeMembers(actor, groupId(id), validate(ROUTES.changeGroupMembers.body, body));
  }
}
