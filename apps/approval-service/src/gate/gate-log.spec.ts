import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Writable } from 'node:stream';
import type { ParsedRequestOf } from '@skald/contracts';
import { createLogger } from '@skald/service-kit/logger';
import type { AuditEntry } from '../audit/audit.repository';
import { RuleSet } from '../rules/rule-set';
import { GateService } from './gate.service';
import { ruleRow } from '../testing-fixtures/rule-row';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 200);

const rule = ruleRow;

const RULES = new RuleSet([
  rule(1, 'read_file', 'deny', { pathPattern: '/workspace/secrets/*' }),
  rule(2, 'read_file', 'allow'),
  rule(3, 'list_files', 'allow'),
  rule(4, 'mcp__evil__*', 'deny'),
  rule(5, 'write_file', 'require'),
  rule(6, '*', 'require'),
]);

const path = fc.oneof(
  fc.constantFrom(
    'a.txt',
    '/workspace/secrets/key',
    'secrets/key',
    '../secrets/key',
    './secrets//key',
    'shared-memory/x.md',
    'user-memory/n.md',
    '/etc/passwd',
    'reads/ok.txt',
  ),
  fc.string({ maxLength: 12 }),
);

/** What a model may ask for: routine reads, traversal at denied paths, shared-memory writes as a non-admin, unknown tools. */
const request = fc.record({
  tool: fc.constantFrom('read_file', 'list_files', 'write_file', 'mcp__evil__x', 'mcp__good__y', 'delete_file'),
  path,
  admin: fc.boolean(),
  runContext: fc.option(
    fc.constant({
      allow_fs_reads: ['/workspace/reads'] as string[],
      allow_fs_writes: ['/workspace/reads'] as string[],
    }),
    {
      nil: undefined,
    },
  ),
  bypass: fc.boolean(),
});

/**
 * The gate's log after the CPU cut: an allow by the rules (the routine call) is logged at debug, and
 * everything else — a deny (by a rule, by policy, auto-deny), a Require that waits for a human, and
 * a Require relaxed by a bypass or the RunContext — stays at info. Whatever the call, the decision
 * answered is the one audited, exactly once, and exactly one log line says it, naming the
 * request's user, session, turn and tool call.
 */
describe('GateService.check: what is logged at info', () => {
  function gate(scopes: string[]) {
    const lines: Array<{ level: string; msg: string; decision: string; by: string; tool: string }> = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
        done();
      },
    });
    const log = createLogger('approval-service', 'debug', 'a1', out);
    const audited: AuditEntry[] = [];
    const service = new GateService(
      { ruleSet: async () => RULES } as never,
      { activeScopes: async () => scopes } as never,
      {
        accepting: true,
        record: (e: AuditEntry) => void audited.push(e),
        recordNow: async (e: AuditEntry) => void audited.push(e),
      } as never,
      {} as never,
      log,
    );
    return { service, lines, audited };
  }

  function check(r: {
    tool: string;
    path: string;
    admin: boolean;
    runContext?: { allow_fs_reads: string[]; allow_fs_writes: string[] };
    landing?: string[];
  }): ParsedRequestOf<'approval.check'> {
    return {
      actor: { userId: randomUUID(), role: r.admin ? 'admin' : 'user' },
      session_id: randomUUID(),
      tool_call_id: randomUUID(),
      turn_id: randomUUID(),
      agent_id: 'main',
      source: 'web',
      tool_name: r.tool,
      arguments: { path: r.path, content: 'x' },
      run_context: r.runContext,
      ...(r.landing ? { landing: r.landing } : {}),
    };
  }

  it('logs only the rules’ allows at debug; every other decision at info, each audited once', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const { service, lines, audited } = gate(r.bypass ? ['all'] : []);
        const req = check(r);
        const result = await service.check(req);
        expect(audited).toHaveLength(1);
        expect(audited[0]).toMatchObject({ decision: result.decision, by: result.by, toolName: r.tool });
        const said = lines.filter((l) => l.msg === 'tool call checked');
        expect(said).toHaveLength(1);
        expect(said[0]).toMatchObject({ decision: result.decision, by: result.by, tool: r.tool });
        const routine = result.decision === 'allow' && result.by === 'rule';
        expect(said[0].level).toBe(routine ? 'debug' : 'info');
        const ids = {
          userId: req.actor.userId,
          sessionId: req.session_id,
          turnId: req.turn_id,
          toolCallId: req.tool_call_id,
        };
        for (const line of lines) expect(line).toMatchObject(ids);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('a headless session (auto_deny) gets a Require refused, audited by auto_deny, not require', async () => {
    const { service, audited } = gate([]);
    const result = await service.check({
      ...check({ tool: 'write_file', path: 'a.txt', admin: false }),
      auto_deny: true,
    });
    expect(result).toMatchObject({ decision: 'deny', by: 'auto_deny' });
    expect(audited).toEqual([expect.objectContaining({ decision: 'deny', by: 'auto_deny', toolName: 'write_file' })]);
    // A bypass still lets it through before auto-deny applies (spec: bypasses, then auto-deny).
    const bypassed = gate(['all']);
    expect(
      await bypassed.service.check({ ...check({ tool: 'write_file', path: 'a.txt', admin: false }), auto_deny: true }),
    ).toMatchObject({ decision: 'allow', by: 'bypass' });
  });

  it('a read of a denied path spelled another way is refused and said at info', async () => {
    for (const p of [
      'secrets/./key',
      'secrets/../secrets/key',
      '/workspace/./secrets/key',
      'a/../../workspace/secrets/key',
    ]) {
      const { service, lines } = gate([]);
      const result = await service.check(check({ tool: 'read_file', path: p, admin: false }));
      expect(result.decision).toBe('deny');
      expect(lines).toEqual([expect.objectContaining({ level: 'info', decision: 'deny', msg: 'tool call checked' })]);
    }
  });

  it('a bypass or the RunContext letting a Require through is said at info', async () => {
    const bypassed = gate(['all']);
    const r1 = await bypassed.service.check(check({ tool: 'write_file', path: 'a.txt', admin: false }));
    expect(r1).toMatchObject({ decision: 'allow', by: 'bypass' });
    expect(bypassed.lines).toEqual([expect.objectContaining({ level: 'info', by: 'bypass' })]);
    const pre = gate([]);
    const preAuthorised = {
      tool: 'write_file',
      path: 'reads/ok.txt',
      admin: false,
      runContext: { allow_fs_reads: [], allow_fs_writes: ['/workspace/reads'] },
    };
    const r2 = await pre.service.check(check({ ...preAuthorised, landing: ['/workspace/reads/ok.txt'] }));
    expect(r2).toMatchObject({ decision: 'allow', by: 'run_context' });
    expect(pre.lines).toEqual([expect.objectContaining({ level: 'info', by: 'run_context' })]);
    // Where the write lands unknown (no `landing`): the pre-authorised path alone allows nothing.
    const unknown = await gate([]).service.check(check(preAuthorised));
    expect(unknown).toMatchObject({ decision: 'require' });
  });
});
