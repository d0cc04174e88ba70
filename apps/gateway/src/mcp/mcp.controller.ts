import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { Actor, McpServerInput, McpServerName, McpServerPatch } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { CurrentActor } from '../auth/actor.decorator';
import { callService, notFound } from '../http/api-error';
import { validate } from '../http/validate';

/**
 * The caller's MCP servers, kept by the tool runner. Credentials (`env`, `headers` values) are
 * write-only: the answers list their keys only.
 */
@Controller('api/mcp/servers')
export class McpController {
  constructor(private readonly bus: Bus) {}

  @Get()
  list(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('mcp.servers.list', { actor }));
  }

  @Post()
  @HttpCode(201)
  create(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const server = validate(McpServerInput, body);
    return this.call(() => this.bus.call('mcp.servers.create', { actor, server }));
  }

  @Patch(':name')
  update(@CurrentActor() actor: Actor, @Param('name') name: string, @Body() body: unknown) {
    if (!McpServerName.safeParse(name).success) throw notFound('MCP server');
    const patch = validate(McpServerPatch, body);
    return this.call(() => this.bus.call('mcp.servers.update', { actor, name, patch }));
  }

  @Delete(':name')
  @HttpCode(204)
  async delete(@CurrentActor() actor: Actor, @Param('name') name: string) {
    if (!McpServerName.safeParse(name).success) throw notFound('MCP server');
    await this.call(() => this.bus.call('mcp.servers.delete', { actor, name }));
  }

  /** No tool runner answering → 503 with Retry-After. */
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('the tool runner is not available; retry shortly', fn);
  }
}
