import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { WebToolsService } from '../web/web-tools.service';
import { McpService } from './mcp.service';

/** NATS edge of MCP: the gateway's `mcp.servers.*` (the caller's own servers) and the worker's `mcp.catalog`. */
@Injectable()
export class McpHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly mcp: McpService,
    @Optional() private readonly web?: WebToolsService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('mcp.servers.list', async (req) => ({ items: await this.mcp.list(req.actor) }));
    this.bus.handle('mcp.servers.create', (req) => this.mcp.create(req.actor, req.server));
    this.bus.handle('mcp.servers.update', (req) => this.mcp.update(req.actor, req.name, req.patch));
    this.bus.handle('mcp.servers.delete', async (req) => {
      await this.mcp.delete(req.actor, req.name);
      return { deleted: true as const };
    });
    this.bus.handle('mcp.catalog', async (req) => ({
      ...(await this.mcp.catalog(req.actor, req.granted)),
      unavailable_builtins: this.web?.searchOffered ? [] : ['web_search'],
    }));
  }
}
