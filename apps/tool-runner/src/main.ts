import 'reflect-metadata';
import { bootstrapService, ConfigError, createLogger, instanceName, loadConfig } from '@skald/service-kit';
import { AppModule } from './app.module';
import { ToolRunnerConfigSchema } from './config';
import { ToolExecService } from './exec/tool-exec.service';

async function main(): Promise<void> {
  const config = loadConfig(ToolRunnerConfigSchema);
  const instance = instanceName('tool-runner', config.SKALD_INSTANCE);
  const log = createLogger('tool-runner', config.LOG_LEVEL, instance);
  log.info(
    { workspaces: config.SKALD_WORKSPACES, quota: config.SKALD_WORKSPACE_QUOTA, sandbox: config.SKALD_SANDBOX },
    'tool-runner configuration',
  );
  await bootstrapService({
    service: 'tool-runner',
    module: AppModule.register(config, log, instance),
    port: config.PORT,
    host: config.HOST,
    log,
    graceMs: config.SKALD_SHUTDOWN_GRACE_MS,
    // Running calls get the grace period (minus a margin to stop commands and answer) to finish.
    drain: (app) => app.get(ToolExecService).drain(Math.max(0, config.SKALD_SHUTDOWN_GRACE_MS - 3_000)),
  });
}

main().catch((e: unknown) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
