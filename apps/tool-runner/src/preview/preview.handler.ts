import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Bus } from '@skald/messaging';
import { withRequestLogIds } from '@skald/service-kit';
import { MemoryToolsService } from '../memory/memory-tools.service';
import { PreviewService } from './preview.service';

/** NATS edge: `tools.preview` → the diff of a pending write; `tools.memory_context` → a turn's memory context;
 * `tools.memory_read` → memory documents by path (the agents' `inject_memory` files). */
@Injectable()
export class PreviewHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly previews: PreviewService,
    @Optional() private readonly memory?: MemoryToolsService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('tools.preview', (req) => withRequestLogIds(req, () => this.previews.reply(req)));
    this.bus.handle('tools.memory_context', async (req) => ({
      context: this.memory ? await this.memory.context(req.actor.userId, req.query, req.max_chars) : null,
    }));
    this.bus.handle('tools.memory_read', async (req) => ({
      documents: this.memory
        ? await this.memory.readDocuments(req.actor.userId, req.paths)
        : req.paths.map((path) => ({ path, content: null })),
    }));
  }
}
