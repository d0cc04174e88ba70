import { Injectable, OnModuleInit } from '@nestjs/common';
import { TOOL_ALIVE_INTERVAL_MS, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { ToolExecService } from './tool-exec.service';

/**
 * NATS edge: `tools.exec` (queue group `tool-runner`) → one tool call, with `tools.alive.<id>` on
 * receipt and every `TOOL_ALIVE_INTERVAL_MS` until the reply (so a caller tells a dead runner from a
 * long command); `tools.cancel.<id>` (every replica) → abort it.
 */
@Injectable()
export class ToolsExecHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly tools: ToolExecService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('tools.exec', (req) => this.alive(req.tool_call_id, () => this.tools.exec(req)));
    this.bus.subscribe('toolCancel', (m) => this.tools.cancel(m.tool_call_id));
  }

  private async alive<T>(toolCallId: string, work: () => Promise<T>): Promise<T> {
    const beat = (): void => {
      try {
        this.bus.publish(topicOf('toolAlive', toolCallId), { tool_call_id: toolCallId });
      } catch {
        // A closed connection: the caller hears silence, which is the truth.
      }
    };
    // A sign on receipt: the caller gives a call up on silence only once it heard one (a runner of a
    // release that sends none is waited for until the request's deadline), so the first comes at once.
    beat();
    const timer = setInterval(beat, TOOL_ALIVE_INTERVAL_MS);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }
}
