import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { Actor, ChatMessagesQuery, Id, PostMessageRequest, SessionListQuery, Source } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { SessionsGateway } from './sessions.gateway';

interface StatusRes {
  status(code: number): void;
}

@Controller('api')
export class SessionsController {
  constructor(private readonly sessions: SessionsGateway) {}

  @Get('sessions')
  list(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(SessionListQuery, query);
    return this.sessions.list(actor, q.source, q.page, q.per_page);
  }

  @Get('sessions/:id')
  detail(@CurrentActor() actor: Actor, @Param('id') id: string) {
    if (!Id.safeParse(id).success) throw new ApiError('not_found', 'session not found');
    return this.sessions.detail(actor, id);
  }

  @Post('sessions')
  @HttpCode(201)
  async create(@CurrentActor() actor: Actor, @Query('source') source: unknown) {
    const s = validate(Source, source ?? 'web');
    return { session_id: await this.sessions.newSession(actor, s) };
  }

  @Post(':source/messages')
  async post(
    @CurrentActor() actor: Actor,
    @Param('source') source: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: StatusRes,
  ) {
    const s = validate(Source, source);
    const msg = validate(PostMessageRequest, body);
    const result = await this.sessions.submit(actor, s, msg);
    if ('command_result' in result) {
      res.status(200);
      return result;
    }
    res.status(result.duplicate ? 200 : 202);
    return result;
  }

  @Get(':source/messages')
  messages(@CurrentActor() actor: Actor, @Param('source') source: string, @Query() query: unknown) {
    const s = validate(Source, source);
    const q = validate(ChatMessagesQuery, query);
    return this.sessions.messages(actor, s, q.before, q.limit);
  }

  @Post(':source/cancel')
  @HttpCode(202)
  async cancel(@CurrentActor() actor: Actor, @Param('source') source: string) {
    const s = validate(Source, source);
    return this.sessions.cancelActive(actor, s);
  }
}
