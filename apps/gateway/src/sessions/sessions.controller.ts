import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  Actor,
  ChatMessagesQuery,
  EditMessageRequest,
  ExportQuery,
  Id,
  PostMessageRequest,
  RegenerateRequest,
  RenameSessionRequest,
  SessionListQuery,
  Source,
} from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { SessionsGateway } from './sessions.gateway';

interface StatusRes {
  status(code: number): void;
}
interface HeaderRes {
  setHeader(name: string, value: string): void;
}

/** A path id that is not a UUID names nothing: 404, like a foreign one. */
function sessionId(id: string): string {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'session not found');
  return id;
}

@Controller('api')
export class SessionsController {
  constructor(private readonly sessions: SessionsGateway) {}

  @Get('sessions')
  list(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(SessionListQuery, query);
    if (q.q !== undefined) return this.sessions.search(actor, q.q, q.source, q.page, q.per_page);
    return this.sessions.list(actor, q.source, q.page, q.per_page);
  }

  @Get('sessions/:id')
  detail(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.sessions.detail(actor, sessionId(id));
  }

  @Patch('sessions/:id')
  rename(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const sid = sessionId(id);
    return this.sessions.rename(actor, sid, validate(RenameSessionRequest, body).title);
  }

  @Delete('sessions/:id')
  @HttpCode(204)
  async remove(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    await this.sessions.delete(actor, sessionId(id));
  }

  /** A download: never rendered by the browser as a page. */
  @Get('sessions/:id/export')
  async export(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Query() query: unknown,
    @Res({ passthrough: true }) res: HeaderRes,
  ) {
    const sid = sessionId(id);
    const r = await this.sessions.export(actor, sid, validate(ExportQuery, query).format);
    res.setHeader('content-disposition', `attachment; filename="${r.filename}"`);
    res.setHeader('x-content-type-options', 'nosniff');
    if (r.format === 'json') return r.content;
    res.setHeader('content-type', 'text/markdown; charset=utf-8');
    return r.content;
  }

  @Post('sessions/:id/activate')
  @HttpCode(200)
  activate(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.sessions.activate(actor, sessionId(id));
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

  @Post(':source/regenerate')
  @HttpCode(202)
  regenerate(@CurrentActor() actor: Actor, @Param('source') source: string, @Body() body: unknown) {
    const s = validate(Source, source);
    return this.sessions.rewind(actor, s, validate(RegenerateRequest, body));
  }

  @Post(':source/messages/:id/edit')
  @HttpCode(202)
  edit(@CurrentActor() actor: Actor, @Param('source') source: string, @Param('id') id: string, @Body() body: unknown) {
    const s = validate(Source, source);
    if (!Id.safeParse(id).success) throw new ApiError('not_found', 'message not found');
    const b = validate(EditMessageRequest, body);
    return this.sessions.rewind(actor, s, { ...b, message_id: id });
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
