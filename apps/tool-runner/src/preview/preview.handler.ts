import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { MemoryToolsService } from '../memory/memory-tools.service';
import { LandingService } from '../workspace/landing.service';
import { PreviewService } from './preview.service';

/** NATS edge: `tools.preview` → the diff of a pending write; `tools.resolve` → where a call's paths land; `tools.memory_turn` → a turn's memory: documents by
 * path (the agents' `inject_memory` files) and the memory context of the user's message, in one statement. */
@Injectable()
export class PreviewHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly previews: PreviewService,
    private readonly landings: LandingService,
    @Optional() private readonly memory?: MemoryToolsService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('tools.preview', (req) => this.previews.reply(req));
    this.bus.handle('tools.resolve', (req) => this.landings.resolve(req));
    this.bus.handle('tools.memory_turn', async (req) =>
      this.memory
        ? this.memory.forTurn(req.actor.userId, req.paths, req.query, req.max_chars)
        : { documents: req.paths.map((path) => ({ path, content: null })), context: null },
    );
  }
}
