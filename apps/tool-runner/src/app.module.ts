import { DynamicModule, Module } from '@nestjs/common';
import { MessagingModule } from '@skald/messaging';
import { Logger, OpsModule, Readiness } from '@skald/service-kit';
import { CommandRunner } from './command/command-runner';
import { ExecuteCmdService } from './command/execute-cmd.service';
import { PlainCommandRunner } from './command/plain-command.runner';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from './config';
import { ToolExecService } from './exec/tool-exec.service';
import { ToolMetrics } from './exec/tool-metrics';
import { ToolRouter } from './exec/tool-router';
import { ToolsExecHandler } from './exec/tools-exec.handler';
import { FileToolsService } from './files/file-tools.service';
import { RegexSearch } from './files/regex-search';
import { WORKSPACE_OPTIONS, WorkspaceOptions, WorkspacesService } from './workspace/workspaces.service';

@Module({})
export class AppModule {
  static register(config: ToolRunnerConfig, log: Logger, instance: string): DynamicModule {
    const readiness = new Readiness();
    const workspaces: WorkspaceOptions = { root: config.SKALD_WORKSPACES, quota: config.SKALD_WORKSPACE_QUOTA };
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({ service: 'tool-runner', readiness }),
        MessagingModule.forRoot({
          servers: config.NATS_URL,
          name: instance,
          user: config.NATS_USER,
          pass: config.NATS_PASSWORD,
          requestTimeoutMs: config.NATS_REQUEST_TIMEOUT_MS,
          logger: log,
          readiness,
        }),
      ],
      providers: [
        { provide: TOOL_RUNNER_CONFIG, useValue: config },
        { provide: LOGGER, useValue: log },
        { provide: WORKSPACE_OPTIONS, useValue: workspaces },
        // Issue 6: a bubblewrap runner takes this place when SKALD_SANDBOX=bwrap.
        { provide: CommandRunner, useClass: PlainCommandRunner },
        WorkspacesService,
        RegexSearch,
        FileToolsService,
        ExecuteCmdService,
        ToolRouter,
        ToolMetrics,
        ToolExecService,
        ToolsExecHandler,
      ],
    };
  }
}
