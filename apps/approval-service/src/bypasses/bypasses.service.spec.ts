/**
 * The "no bypass" memo of BypassesService: a session without a bypass is remembered for at most a
 * second, and forgotten when a bypass is opened — here, by a broadcast from another replica, or at a
 * connection gap (a broadcast sent in the gap never arrives). A read that started before the
 * forgetting must not put the memo back: its answer may predate the bypass.
 */
import { BypassesService } from './bypasses.service';
import type { BypassesRepository } from './bypasses.repository';
import type { Bus } from '@skald/messaging/bus-port';
import type { ApprovalEventsPublisher } from '../events/approval-events.publisher';
import type { BypassScope } from '../rules/gate-input';

class FakeBus {
  opened: ((m: { session_id: string }) => void) | null = null;
  gaps = new Set<() => void>();
  subscribe(_topic: string, cb: (m: { session_id: string }) => void) {
    this.opened = cb;
    return { unsubscribe: () => undefined };
  }
  onConnectionGap(l: () => void) {
    this.gaps.add(l);
    return () => void this.gaps.delete(l);
  }
  gap() {
    for (const l of this.gaps) l();
  }
}

function setUp() {
  const bus = new FakeBus();
  const stored = new Map<string, BypassScope[]>();
  let reads = 0;
  let gate: Promise<void> | null = null;
  const repo = {
    activeScopes: async (sessionId: string) => {
      reads++;
      const answer = stored.get(sessionId) ?? [];
      if (gate) await gate;
      return answer;
    },
  } as unknown as BypassesRepository;
  const events = { bypassOpened: () => undefined } as unknown as ApprovalEventsPublisher;
  const svc = new BypassesService(repo, bus as unknown as Bus, events);
  svc.onModuleInit();
  return {
    bus,
    svc,
    stored,
    reads: () => reads,
    hold: () => {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    },
  };
}

const scope = { tools: ['execute_cmd'] } as unknown as BypassScope;

describe('BypassesService: the no-bypass memo', () => {
  it('answers a session without a bypass from memory within the second, from Postgres after', async () => {
    const t = setUp();
    expect(await t.svc.activeScopes('s1')).toEqual([]);
    expect(await t.svc.activeScopes('s1')).toEqual([]);
    expect(t.reads()).toBe(1);
  });

  it('forgets it when another replica broadcasts a bypass opened', async () => {
    const t = setUp();
    await t.svc.activeScopes('s1');
    t.stored.set('s1', [scope]);
    t.bus.opened!({ session_id: 's1' });
    expect(await t.svc.activeScopes('s1')).toEqual([scope]);
  });

  it('forgets every session at a connection gap (a broadcast sent in the gap is lost)', async () => {
    const t = setUp();
    await t.svc.activeScopes('s1');
    await t.svc.activeScopes('s2');
    t.stored.set('s1', [scope]);
    t.bus.gap();
    expect(await t.svc.activeScopes('s1')).toEqual([scope]);
    expect(await t.svc.activeScopes('s2')).toEqual([]);
    expect(t.reads()).toBe(4);
  });

  it('a read that began before the bypass was opened does not bring the memo back', async () => {
    const t = setUp();
    const release = t.hold();
    const early = t.svc.activeScopes('s1'); // reads "none" before the bypass is committed
    t.stored.set('s1', [scope]);
    t.bus.opened!({ session_id: 's1' });
    release();
    expect(await early).toEqual([]);
    expect(await t.svc.activeScopes('s1')).toEqual([scope]);
  });

  it('stops listening for gaps when the module is destroyed', () => {
    const t = setUp();
    expect(t.bus.gaps.size).toBe(1);
    t.svc.onModuleDestroy();
    expect(t.bus.gaps.size).toBe(0);
  });
});
