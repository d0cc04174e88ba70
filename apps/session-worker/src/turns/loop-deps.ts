import { randomUUID } from 'node:crypto';
import type { LoopDeps } from '@skald/agent-loop';
import type { LlmManager } from '@skald/llm';
import type { Bus } from '@skald/messaging/bus-port';
import { loggerWithIds } from '@skald/service-kit/log-ids';
import type { Logger } from '@skald/service-kit';
import type { DataSource } from 'typeorm';
import type { WorkerConfig } from '../config';
import type { Lease } from '../lease/lease.repository';
import type { LlmService } from '../llm/llm.service';
import type { LlmUsageRepository } from '../llm/llm-usage.repository';
import { AgentCatalogService, AgentsRead, WORKSPACE_ROOT } from '../agents/agent-catalog.service';
import {
  LlmAdapter,
  NatsAsyncTasks,
  NatsGate,
  NatsHumanWait,
  NatsImages,
  NatsMemory,
  PgSessionStore,
  RunnerToolSet,
  TurnFacts,
} from '../loop-adapters';
import type { EventAnnouncer } from './event-announcer';
import { loopConfigOf } from './loop-config';
import { osInfo } from './os-info';
import type { TurnMetrics } from './turn-metrics';
import type { Role } from '@skald/contracts';

const OS = osInfo();
/** The host's time zone, read once (the default when SKALD_TIMEZONE is unset). */
const HOST_TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** What the loop's dependencies are built from (the driver's own collaborators). */
export interface LoopDepsSources {
  ds: DataSource;
  bus: Bus;
  announcer: EventAnnouncer;
  metrics: TurnMetrics;
  catalog: AgentCatalogService;
  llmManager: LlmManager;
  llmService: LlmService;
  config: WorkerConfig;
  log: Logger;
  usage: LlmUsageRepository | null;
  /** Whether the worker is draining (a human wait then parks at once). */
  draining: () => boolean;
}

/** The loop's ports for one session's owner, built from the worker's adapters (loop-adapters/). */
export class LoopDepsBuilder {
  constructor(private readonly src: LoopDepsSources) {}

  /**
   * The session store for a holder of `lease`: its commits are fenced by the lease's epoch, and
   * its committed events announced with `log()` (the turn's logger when they are announced).
   */
  store(lease: Lease, log: () => Logger): PgSessionStore {
    return new PgSessionStore(
      this.src.ds,
      { owner: lease.owner, epoch: lease.epoch },
      (ev) => this.src.announcer.announce(ev, { log: log() }),
      this.src.usage,
    );
  }

  /**
   * The loop's ports for one session's owner (turns, and the /context and /compact commands).
   * `agentsRead`: the user's agent rows read with the turn's start, for the catalog. The catalog's
   * `inject_memory` documents and the loop's memory context share one `NatsMemory` (one request).
   * `log`: the turn's logger (its lines name the turn), passed to the ports that log.
   * What the owner's groups allow (agents, LLM clients, security groups) is the store's start read
   * of them (`ownerGroups`), and so are the owner's limits (`ownerBudget`): read with every turn's start,
   * so a change applies from the next turn.
   */
  deps(
    store: PgSessionStore,
    userId: string,
    role: Role,
    turnId?: string,
    agentsRead: AgentsRead | null = null,
    log: Logger = loggerWithIds(this.src.log, { userId }),
    /** The job run whose session this is (its human requests are the job's), or null. */
    jobRunId: string | null = null,
  ): LoopDeps {
    const { bus, config } = this.src;
    const facts = new TurnFacts();
    const groups = store.ownerGroups();
    const memory = new NatsMemory(bus, userId, role, facts);
    return {
      store,
      gate: new NatsGate(bus, role, turnId, facts, groups.securityGroups),
      human: new NatsHumanWait(bus, role, {
        parkAfterMs: config.SKALD_PARK_AFTER * 1000,
        pollMs: config.SKALD_HUMAN_POLL_MS,
        draining: this.src.draining,
        turnId,
        jobRunId,
        securityGroups: groups.securityGroups,
      }),
      tools: new RunnerToolSet(bus, role, turnId, facts),
      tasks: new NatsAsyncTasks(bus, role),
      llm: new LlmAdapter(this.src.llmManager, this.src.llmService, this.src.metrics, log, groups, store.ownerBudget()),
      events: this.src.announcer.sinkFor(userId),
      catalog: this.src.catalog.forTurn(userId, memory, agentsRead, log, groups),
      memory,
      images: new NatsImages(bus, role),
      clock: {
        now: () => new Date(),
        timeZone: () => config.SKALD_TIMEZONE ?? HOST_TIME_ZONE,
      },
      ids: { newId: () => randomUUID() },
      config: loopConfigOf(config, { os: OS, defaultWorkingDirectory: WORKSPACE_ROOT }),
    };
  }
}
