import { Body, Controller, Param, Query, Res } from '@nestjs/common';
import { Actor, Id, ROUTES, Source } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { SessionsGateway } from './sessions.gateway';
import { Route } from '../http/route.decorator';

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

@Controller()
export class SessionsController {
  constructor(private readonly sessions: SessionsGateway) {}

  @Route(ROUTES.listSessions)
  list(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(ROUTES.listSessions.query, query);
    if (q.q !== undefined) return this.sessions.search(actor, q.q, q.source, q.page, q.per_page);
    return this.sessions.list(actor, q.source, q.page, q.per_page);
  }

  @Route(ROUTES.getSession)
  detail(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.sessions.detail(actor, sessionId(id));
  }

  @Route(ROUTES.renameSession)
  rename(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const sid = sessionId(id);
    return this.sessions.rename(actor, sid, validate(ROUTES.renameSession.body, body).title);
  }

  @Route(ROUTES.deleteSession)
  async remove(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    await this.sessions.delete(actor, sessionId(id));
  }

  /** A download: never rendered by the browser as a page. */
  @Route(ROUTES.exportSession)
  async export(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Query() query: unknown,
    @Res({ passthrough: true }) res: HeaderRes,
  ) {
    const sid = sessionId(id);
    const r = await this.sessions.export(actor, sid, validate(ROUTES.exportSession.query, query).format);
    res.setHeader('content-disposition', `attachment; filename="${r.filename}"`);
    res.setHeader('x-content-type-options', 'nosniff');
    if (r.format === 'json') return r.content;
    res.setHeader('content-type', 'text/markdown; charset=utf-8');
    return r.content;
  }

  @Route(ROUTES.activateSession)
  activate(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.sessions.activate(actor, sessionId(id));
  }

  @Route(ROUTES.createSession)
  async create(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(ROUTES.createSession.query, query);
    const source = q.source ?? 'web';
    if (q.agent_id !== undefined)
      return { session_id: await this.sessions.newSessionWithAgent(actor, source, q.agent_id) };
    return { session_id: await this.sessions.newSession(actor, source) };
  }

  @Route(ROUTES.postMessage)
  async post(
    @CurrentActor() actor: Actor,
    @Param('source') source: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: StatusRes,
  ) {
    const s = validate(Source, source);
    const msg = validate(ROUTES.postMessage.body, body);
    const result = await this.sessions.submit(actor, s, msg);
    if ('command_result' in result) {
      res.status(200);
      return result;
    }
    res.status(result.duplicate ? 200 : 202);
    return result;
  }

  @Route(ROUTES.regenerate)
  regenerate(@CurrentActor() actor: Actor, @Param('source') source: string, @Body() body: unknown) {
    const s = validate(Source, source);
    return this.sessions.rewind(actor, s, validate(ROUTES.regenerate.body, body));
  }

  @Route(ROUTES.editMessage)
  edit(@CurrentActor() actor: Actor, @Param('source') source: string, @Param('id') id: string, @Body() body: unknown) {
    const s = validate(Source, source);
    if (!Id.safeParse(id).success) throw new ApiError('not_found', 'message not found');
    const b = validate(ROUTES.editMessage.body, body);
    return this.sessions.rewind(actor, s, { ...b, message_id: id });
  }

  @Route(ROUTES.listMessages)
  messages(@CurrentActor() actor: Actor, @Param('source') source: string, @Query() query: unknown) {
    const s = validate(Source, source);
    const q = validate(ROUTES.listMessages.query, query);
    return this.sessions.messages(actor, s, q.before, q.limit);
  }

  @Route(ROUTES.cancelTurn)
  async cancel(@CurrentActor() actor: Actor, @Param('source') source: string) {
    const s = validate(Source, source);
    return this.sessions.cancelActive(actor, s);
  }
}
