/**
 * The runner's side of the tool registry: every built-in tool has a handler, every file write a
 * preview, and the metrics labels, read-only set and restart hints come from the definitions.
 * (The handler and preview maps are typed by the registry, so a missing entry is also a compile
 * error; this catches an entry that exists but is not wired.)
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { BUILTIN_TOOLS, FS_WRITE_TOOLS } from '@skald/contracts';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import { PlainCommandRunner } from '../command/plain-command.runner';
import { PREVIEWS } from '../preview/preview.service';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { ToolMetrics } from './tool-metrics';
import { ToolRouter } from './tool-router';

describe('tool runner × registry', () => {
  let fx: WorkspaceFixture;
  let runner: PlainCommandRunner;
  let router: ToolRouter;

  beforeEach(async () => {
    fx = await workspaceFixture();
    runner = new PlainCommandRunner();
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, pino({ level: 'silent' }));
    router = new ToolRouter(fx.files, commands);
  });
  afterEach(async () => {
    runner.onApplicationShutdown();
    await fx.cleanup();
  });

  it('has a handler for every built-in tool, and nothing else', () => {
    expect(router.names).toEqual(BUILTIN_TOOLS.map((t) => t.name));
  });

  it('every tool is dispatched to its handler: no built-in answers "unknown tool"', async () => {
    for (const t of BUILTIN_TOOLS) {
      const outcome = await router.route(t.name, fx.ctx(), {}).then(
        () => 'ran',
        (e: unknown) => (e instanceof ToolError ? e.message : String(e)),
      );
      expect([t.name, outcome]).not.toEqual([t.name, expect.stringContaining('unknown tool')]);
    }
  });

  it('memory_search reaches the memory store (refused here: this runner has none)', async () => {
    await expect(router.route('memory_search', fx.ctx(), { query: 'x' })).rejects.toThrow(
      'memory documents are not available on this tool runner',
    );
  });

  it('has a preview for every tool that writes a file, and only those', () => {
    expect(Object.keys(PREVIEWS).sort()).toEqual([...FS_WRITE_TOOLS].sort());
  });

  it('restart hints are the registry’s', () => {
    for (const t of BUILTIN_TOOLS)
      expect([t.name, router.restartHint(t.name, randomUUID())]).toEqual([t.name, t.restartHint]);
    expect(router.restartHint('something_else', randomUUID())).toBe('markInterrupted');
  });

  it('labels each built-in tool by its metrics label, MCP tools as mcp, anything else as other', async () => {
    const registry = new Registry();
    const metrics = new ToolMetrics(registry);
    for (const t of BUILTIN_TOOLS) metrics.finished(t.name, 'done', 0.01);
    metrics.finished('mcp__gh__issues', 'done', 0.01);
    metrics.finished('nope', 'failed', 0.01);
    const counter = (await registry.getMetricsAsJSON()).find((m) => m.name === 'skald_tool_calls_total')!;
    const labels = (counter as unknown as { values: Array<{ labels: { tool: string } }> }).values.map(
      (v) => v.labels.tool,
    );
    expect(labels.sort()).toEqual([...BUILTIN_TOOLS.map((t) => t.metricsLabel), 'mcp', 'other'].sort());
  });
});
