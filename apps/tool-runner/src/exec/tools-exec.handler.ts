import { Injectable, OnModuleInit } from '@nestjs/common';
import { TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { withRequestLogIds } from '@skald/service-kit';
import { ToolExecService } from './tool-exec.service';

/** NATS edge: `tools.exec` (queue group `tool-runner`) → one tool call; `tools.cancel.<id>` (every replica) → abort it. */
@Injectable()
export class ToolsExecHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly tools: ToolExecService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('tools.exec', (req) => withRequestLogIds(req, () => this.tools.exec(req)));
    this.bus.subscribe(TOPICS.toolCancel.pattern, TOPICS.toolCancel.message, (m) => this.tools.cancel(m.tool_call_id));
  }
}
