import { Body, Controller, Param } from '@nestjs/common';
import { Id, ROUTES } from '@skald/contracts';
import { AuthService, toUserDto } from '../auth/auth.service';
import { PasswordHasher } from '../auth/password-hasher';
import { UsersRepository } from '../auth/users.repository';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { Route } from '../http/route.decorator';

@Controller()
export class AdminUsersController {
  constructor(
    private readonly users: UsersRepository,
    private readonly auth: AuthService,
    private readonly hasher: PasswordHasher,
  ) {}

  @Route(ROUTES.createUser)
  async create(@Body() body: unknown) {
    const req = validate(ROUTES.createUser.body, body);
    const user = await this.users.create({
      email: req.email,
      passwordHash: await this.hasher.withSlot((h) => h.hash(req.password)),
      role: req.role,
    });
    if (!user) throw new ApiError('conflict', 'a user with this email exists', 'email');
    return { id: user.id };
  }

  @Route(ROUTES.listUsers)
  async list() {
    const users = await this.users.list();
    return {
      items: users.map((u) => ({ ...toUserDto(u), disabled: u.disabled, created_at: u.createdAt.toISOString() })),
    };
  }

  /** A change of role, password or the disabled flag ends the user's tokens, tickets and sockets on every replica. */
  @Route(ROUTES.updateUser)
  async update(@Param('id') id: string, @Body() body: unknown) {
    if (!Id.safeParse(id).success) throw new ApiError('not_found', 'user not found');
    const req = validate(ROUTES.updateUser.body, body);
    const user = await this.users.update(id, {
      role: req.role,
      disabled: req.disabled,
      passwordHash: req.password ? await this.hasher.withSlot((h) => h.hash(req.password!)) : undefined,
    });
    if (!user) throw new ApiError('not_found', 'user not found');
    this.auth.announceRevoked(user.id);
    return { ...toUserDto(user), disabled: user.disabled };
  }
}
