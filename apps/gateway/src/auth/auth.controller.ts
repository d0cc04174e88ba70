import { Body, Controller, Param } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { ClientAddress, CurrentActor, CurrentPrincipal } from './actor.decorator';
import { AuthService, Principal } from './auth.service';
import { UsersRepository } from './users.repository';
import { Route } from '../http/route.decorator';

@Controller()
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly users: UsersRepository,
  ) {}

  @Route(ROUTES.login)
  login(@Body() body: unknown, @ClientAddress() address: string) {
    const { email, password } = validate(ROUTES.login.body, body);
    return this.auth.login(email, password, address);
  }

  /** Signs out the credential that made the request, on every replica (204). */
  @Route(ROUTES.logout)
  async logout(@CurrentPrincipal() principal: Principal): Promise<void> {
    await this.auth.logout(principal);
  }

  /** The caller's own password; every credential of theirs ends (204, log in again). */
  @Route(ROUTES.changePassword)
  async changePassword(
    @CurrentPrincipal() principal: Principal,
    @Body() body: unknown,
    @ClientAddress() address: string,
  ): Promise<void> {
    const req = validate(ROUTES.changePassword.body, body);
    await this.auth.changePassword(principal, { current: req.current_password, next: req.new_password }, address);
  }

  @Route(ROUTES.createWsTicket)
  async wsTicket(@CurrentPrincipal() principal: Principal) {
    return { ticket: await this.auth.issueWsTicket(principal) };
  }

  @Route(ROUTES.listTokens)
  async listTokens(@CurrentActor() actor: Actor) {
    const tokens = await this.users.listTokens(actor.userId);
    return {
      items: tokens.map((t) => ({
        id: t.id,
        name: t.name,
        created_at: t.createdAt.toISOString(),
        last_used_at: t.lastUsedAt?.toISOString() ?? null,
      })),
    };
  }

  @Route(ROUTES.createToken)
  createToken(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.auth.createApiToken(actor, validate(ROUTES.createToken.body, body).name);
  }

  /** Revokes one of the caller's API tokens; sockets opened with it close on every replica. */
  @Route(ROUTES.revokeToken)
  async revokeToken(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    if (!Id.safeParse(id).success || !(await this.users.revokeToken({ userId: actor.userId, tokenId: id }))) {
      throw new ApiError('not_found', 'token not found');
    }
    this.auth.announceRevoked(actor.userId);
  }
}
