import { Injectable, OnModuleInit } from '@nestjs/common';
import { TOOL_ALIVE_INTERVAL_MS, TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { ToolExecService } from './tool-exec.service';

/**
 * NATS edge: `tools.exec` (queue group `tool-runner`) → one tool call, with `tools.alive.<id>` every
 * `TOOL_ALIVE_INTERVAL_MS` until the reply (so a caller tells a dead runner from a long command;
 * a call answered within the first interval sends none); `tools.cancel.<id>` (every replica) →
 * abort it.
 */
@Injectable()
export class ToolsExecHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly tools: ToolExecService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('tools.exec', (req) => this.alive(req.tool_call_id, () => this.tools.exec(req)));
    this.bus.subscribe(TOPICS.toolCancel.pattern, TOPICS.toolCancel.message, (m) => this.tools.cancel(m.tool_call_id));
  }

  private async alive<T>(toolCallId: string, work: () => Promise<T>): Promise<T> {
    const beat = (): void => {
      try {
        this.bus.publish(TOPICS.toolAlive.subject(toolCallId), TOPICS.toolAlive.message, { tool_call_id: toolCallId });
      } catch {
        // A closed connection: the caller hears silence, which is the truth.
      }
    };
    // No sign on receipt: the caller's loss window (several intervals) runs from the hand-over, and
    // most calls end before the first interval, so they cost no message.
    const timer = setInterval(beat, TOOL_ALIVE_INTERVAL_MS);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }
}
