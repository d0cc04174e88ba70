import { DynamicModule, Module } from '@nestjs/common';
import { MessagingModule } from '@skald/messaging';
import { DatabaseModule } from '@skald/persistence';
import type { Logger } from '@skald/service-kit';
import { metricsAccessOf } from '@skald/service-kit/metrics-access';
import { OpsModule, Readiness } from '@skald/service-kit/ops';
import { BwrapCommandRunner } from './command/bwrap-command.runner';
import { CommandRunner } from './command/command-runner';
import { ProgressSink } from './command/tool-progress';
import { ExecuteCmdService } from './command/execute-cmd.service';
import { PlainCommandRunner } from './command/plain-command.runner';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from './config';
import { PgToolCallRecords, ToolCallRecords } from './exec/tool-call-records';
import { DURABILITY_OPTIONS, RUNNER_INSTANCE, ToolExecService } from './exec/tool-exec.service';
import { MemoryRepository } from './memory/memory.repository';
import { MemoryToolsService } from './memory/memory-tools.service';
import { McpHandler } from './mcp/mcp.handler';
import { McpLauncher } from './mcp/mcp-launcher';
import { McpServersRepository } from './mcp/mcp-servers.repository';
import { McpService } from './mcp/mcp.service';
import { WebToolsService } from './web/web-tools.service';
import { PreviewHandler } from './preview/preview.handler';
import { PreviewService } from './preview/preview.service';
import { ToolMetrics } from './exec/tool-metrics';
import { ToolRouter } from './exec/tool-router';
import { ToolsExecHandler } from './exec/tools-exec.handler';
import { FileToolsService } from './files/file-tools.service';
import { PATTERN_POOL_OPTIONS, PatternPool } from './patterns/pattern-pool';
import { ImagesHandler } from './images/images.handler';
import { ImagesService } from './images/images.service';
import { DocumentRenditions } from './documents/document-renditions.service';
import { DocumentExtractor } from '@skald/documents';
import { WorkspaceFilesHandler } from './uploads/workspace-files.handler';
import { UPLOAD_OPTIONS, UploadOptions, WorkspaceFilesService } from './uploads/workspace-files.service';
import { PgWorkspaceLock } from './workspace/pg-workspace-lock';
import { WorkspaceLock } from './workspace/workspace-lock';
import { WORKSPACE_OPTIONS, WorkspaceOptions, WorkspacesService } from './workspace/workspaces.service';
import { LandingService } from './workspace/landing.service';

@Module({})
export class AppModule {
  static register(config: ToolRunnerConfig, log: Logger, instance: string): DynamicModule {
    const readiness = new Readiness();
    const workspaces: WorkspaceOptions = {
      root: config.SKALD_WORKSPACES,
      quota: config.SKALD_WORKSPACE_QUOTA,
      inodes: config.SKALD_WORKSPACE_INODES,
      sampleMs: config.SKALD_WORKSPACE_SAMPLE_MS,
      syncReadBytes: config.SKALD_SYNC_READ_BYTES,
    };
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({ service: 'tool-runner', readiness, metrics: metricsAccessOf(config) }),
        DatabaseModule.forRoot({
          url: config.DATABASE_URL,
          poolSize: config.DATABASE_POOL_SIZE,
          poolMin: config.DATABASE_POOL_MIN,
          poolIdleMs: config.DATABASE_POOL_IDLE_MS,
          applicationName: instance,
          readiness,
        }),
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
        {
          provide: UPLOAD_OPTIONS,
          useValue: {
            maxUploads: config.SKALD_MAX_UPLOADS_PER_USER,
            maxStagedBytes: config.SKALD_MAX_STAGED_BYTES_PER_USER,
            stagingTtlMs: config.SKALD_UPLOAD_STAGING_TTL_MS,
            sweepMs: config.SKALD_UPLOAD_SWEEP_MS,
          } satisfies UploadOptions,
        },
        {
          provide: CommandRunner,
          useClass: config.SKALD_SANDBOX === 'none' ? PlainCommandRunner : BwrapCommandRunner,
        },
        ProgressSink,
        { provide: WorkspaceLock, useClass: PgWorkspaceLock },
        WorkspacesService,
        LandingService,
        {
          provide: PATTERN_POOL_OPTIONS,
          useValue: {
            workers: config.SKALD_PATTERN_WORKERS,
            timeoutMs: config.SKALD_PATTERN_TIMEOUT_MS,
            memoryMb: config.SKALD_PATTERN_MEMORY_MB,
            perUser: config.SKALD_PATTERN_PER_USER,
          },
        },
        PatternPool,
        {
          provide: DocumentExtractor,
          useValue: new DocumentExtractor({
            workers: config.SKALD_DOCUMENT_WORKERS,
            timeoutMs: config.SKALD_DOCUMENT_TIMEOUT_MS,
            memoryMb: config.SKALD_DOCUMENT_MEMORY_MB,
            maxInputBytes: config.SKALD_DOCUMENT_MAX_BYTES,
            maxInflatedBytes: config.SKALD_DOCUMENT_MAX_UNPACKED_BYTES,
          }),
        },
        {
          provide: DocumentRenditions,
          useFactory: (ws: WorkspacesService, extractor: DocumentExtractor, logger: Logger) =>
            new DocumentRenditions(ws, extractor, logger),
          inject: [WorkspacesService, DocumentExtractor, LOGGER],
        },
        FileToolsService,
        ExecuteCmdService,
        WebToolsService,
        ToolRouter,
        ToolMetrics,
        { provide: RUNNER_INSTANCE, useValue: instance },
        { provide: DURABILITY_OPTIONS, useValue: { retentionDays: config.SKALD_TOOL_RESULT_RETENTION_DAYS } },
        { provide: ToolCallRecords, useClass: PgToolCallRecords },
        MemoryRepository,
        MemoryToolsService,
        McpServersRepository,
        McpLauncher,
        McpService,
        McpHandler,
        ToolExecService,
        ToolsExecHandler,
        PreviewService,
        PreviewHandler,
        WorkspaceFilesService,
        WorkspaceFilesHandler,
        ImagesService,
        ImagesHandler,
      ],
    };
  }
}
