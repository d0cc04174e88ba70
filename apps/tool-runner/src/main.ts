import { SERVICE } from './instrument';
import 'reflect-metadata';
import { Bus } from '@skald/messaging/bus-port';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { ToolRunnerConfigSchema } from './config';
import { ToolExecService } from './exec/tool-exec.service';

runService({
  service: SERVICE,
  schema: ToolRunnerConfigSchema,
  module: (config, log, instance) => {
    log.info(
      {
        workspaces: config.SKALD_WORKSPACES,
        quota: config.SKALD_WORKSPACE_QUOTA,
        inodes: config.SKALD_WORKSPACE_INODES,
        sandbox: config.SKALD_SANDBOX,
      },
      'tool-runner configuration',
    );
    return AppModule.register(config, log, instance);
  },
  // New requests go to another replica (or wait for this one's restart: the worker retries a
  // request nobody answers); the calls taken get the grace period (minus a margin to stop commands
  // and answer) to finish.
  drain: async (app, config) => {
    await app.get(Bus).stopAnswering();
    await app.get(ToolExecService).drain(Math.max(0, config.SKALD_SHUTDOWN_GRACE_MS - 3_000));
  },
});
