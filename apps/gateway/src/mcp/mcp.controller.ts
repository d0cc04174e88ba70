import { Body, Controller, Param } from '@nestjs/common';
import { Actor, McpServerName, ROUTES } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { CurrentActor } from '../auth/actor.decorator';
import { callService, notFound } from '../http/api-error';
import { validate } from '../http/validate';
import { Route } from '../http/route.decorator';

/**
 * The caller's MCP servers, kept by the tool runner. Credentials (`env`, `headers` values) are
 * write-only: the answers list their keys only.
 */
@Controller()
export class McpController {
  constructor(private readonly bus: Bus) {}

  @Route(ROUTES.listMcpServers)
  list(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('mcp.servers.list', { actor }));
  }

  @Route(ROUTES.createMcpServer)
  create(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const server = validate(ROUTES.createMcpServer.body, body);
    return this.call(() => this.bus.call('mcp.servers.create', { actor, server }));
  }

  @Route(ROUTES.updateMcpServer)
  update(@CurrentActor() actor: Actor, @Param('name') name: string, @Body() body: unknown) {
    if (!McpServerName.safeParse(name).success) throw notFound('MCP server');
    const patch = validate(ROUTES.updateMcpServer.body, body);
    return this.call(() => this.bus.call('mcp.servers.update', { actor, name, patch }));
  }

  @Route(ROUTES.deleteMcpServer)
  async delete(@CurrentActor() actor: Actor, @Param('name') name: string) {
    if (!McpServerName.safeParse(name).success) throw notFound('MCP server');
    await this.call(() => this.bus.call('mcp.servers.delete', { actor, name }));
  }

  /** No tool runner answering → 503 with Retry-After. */
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('the tool runner is not available; retry shortly', fn);
  }
}
