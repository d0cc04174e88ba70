import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Actor, CreateTokenRequest, Id, LoginRequest } from '@skald/contracts';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { CurrentActor } from './actor.decorator';
import { Public } from './auth.guard';
import { AuthService } from './auth.service';
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
  login(@Body() body: unknown) {
    const { email, password } = validate(LoginRequest, body);
    return this.auth.login(email, password);
  }

  @Post('ws-ticket')
  @HttpCode(200)
  async wsTicket(@CurrentActor() actor: Actor) {
    return { ticket: await this.auth.issueWsTicket(actor) };
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

  @Delete('tokens/:id')
  @HttpCode(204)
  async revokeToken(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    if (!Id.safeParse(id).success || !(await this.users.revokeToken({ userId: actor.userId, tokenId: id }))) {
      throw new ApiError('not_found', 'token not found');
    }
  }
}
