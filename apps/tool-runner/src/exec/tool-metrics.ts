import { Inject, Injectable, Optional } from '@nestjs/common';
import { Counter, Histogram, Registry } from 'prom-client';
import { BUILTIN_TOOLS } from '@skald/contracts';
import { METRICS_REGISTRY } from '@skald/service-kit/ops';

/** The `tool` label of each built-in tool (its registry `metricsLabel`); MCP tools share `mcp`, anything else `other`. */
const LABELS: ReadonlyMap<string, string> = new Map(BUILTIN_TOOLS.map((t) => [t.name, t.metricsLabel]));

/** `skald_tool_calls_total{tool,status}`, `skald_tool_call_seconds{tool}`, `skald_tool_call_replays_total`. */
@Injectable()
export class ToolMetrics {
  private readonly calls?: Counter<'tool' | 'status'>;
  private readonly seconds?: Histogram<'tool'>;
  private readonly replays?: Counter;

  constructor(@Optional() @Inject(METRICS_REGISTRY) registry?: Registry) {
    if (!registry) return;
    this.calls = new Counter({
      name: 'skald_tool_calls_total',
      help: 'Tool calls run, by tool and final status',
      labelNames: ['tool', 'status'],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: 'skald_tool_call_seconds',
      help: 'Duration of tool calls',
      labelNames: ['tool'],
      registers: [registry],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    });
    this.replays = new Counter({
      name: 'skald_tool_call_replays_total',
      help: 'Duplicate tools.exec answered from the kept result',
      registers: [registry],
    });
  }

  finished(tool: string, status: string, seconds: number): void {
    const label = LABELS.get(tool) ?? (tool.startsWith('mcp__') ? 'mcp' : 'other');
    this.calls?.inc({ tool: label, status });
    this.seconds?.observe({ tool: label }, seconds);
  }

  replayed(): void {
    this.replays?.inc();
  }
}
