import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { Actor, ChangePasswordRequest, CreateTokenRequest, Id, LoginRequest } from '@skald/contracts';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { ClientAddress, CurrentActor, CurrentPrincipal } from './actor.decorator';
import { Public } from './auth.guard';
import { AuthService, Principal } from './auth.service';
import { UsersRepository } from './users.repository';

@Controller('api/auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly users: UsersRepository,
  ) {}

  @Public()
  @Post('login')
  @HttpCode(200)
  login(@Body() body: unknown, @ClientAddress() address: string) {
    const { email, password } = validate(LoginRequest, body);
    return this.auth.login(email, password, address);
  }

  /** The caller's own password; every credential of theirs ends (204, log in again). */
  @Put('password')
  @HttpCode(204)
  async changePassword(
    @CurrentPrincipal() principal: Principal,
    @Body() body: unknown,
    @ClientAddress() address: string,
  ): Promise<void> {
    const req = validate(ChangePasswordRequest, body);
    await this.auth.changePassword(principal, { current: req.current_password, next: req.new_password }, address);
  }

  @Post('ws-ticket')
  @HttpCode(200)
  async wsTicket(@CurrentPrincipal() principal: Principal) {
    return { ticket: await this.auth.issueWsTicket(principal) };
  }

  @Get('tokens')
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

  @Post('tokens')
  createToken(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.auth.createApiToken(actor, validate(CreateTokenRequest, body).name);
  }

  /** Revokes one of the caller's API tokens; sockets opened with it close on every replica. */
  @Delete('tokens/:id')
  @HttpCode(204)
  async revokeToken(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    if (!Id.safeParse(id).success || !(await this.users.revokeToken({ userId: actor.userId, tokenId: id }))) {
      throw new ApiError('not_found', 'token not found');
    }
    this.auth.announceRevoked(actor.userId);
  }
}
