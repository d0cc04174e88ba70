import pino from 'pino';
import type { DataSource } from 'typeorm';
import { NatsBus } from '@skald/messaging';
import { GroupPolicyRepository } from '../../apps/session-worker/src/groups/group-policy.repository';
import { GroupsHandler } from '../../apps/session-worker/src/groups/groups.handler';
import { GroupsRepository } from '../../apps/session-worker/src/groups/groups.repository';
import { GroupsService } from '../../apps/session-worker/src/groups/groups.service';

/** The session worker's `groups.*` handler (its real service and repository) on this NATS, as a worker serves it. */
export interface GroupsWorker {
  close(): Promise<void>;
}

export async function startGroupsWorker(natsUrl: string, ds: DataSource): Promise<GroupsWorker> {
  const bus = await NatsBus.connect(
    { servers: natsUrl, name: `groups-worker-${process.pid}` },
    pino({ level: 'silent' }),
  );
  new GroupsHandler(bus, new GroupsService(new GroupsRepository(ds), new GroupPolicyRepository(ds))).onModuleInit();
  return { close: () => bus.drain() };
}
