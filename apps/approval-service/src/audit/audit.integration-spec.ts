import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pino from 'pino';
import { DataSource } from 'typeorm';
import type { Actor, ParsedRequestOf } from '@skald/contracts';
import { RuleSet } from '../rules/rule-set';
import { GateService } from '../gate/gate.service';
import { AuditEntry, AuditRepository } from './audit.repository';
import { AUDIT_MAX_BUFFER, AuditService } from './audit.service';
import { ruleRow } from '../testing-fixtures/rule-row';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const rule = ruleRow;
const RULES = new RuleSet([rule(1, 'read_file', 'allow'), rule(2, 'mcp__evil__*', 'deny'), rule(3, '*', 'require')]);

/** Any UTF-16 code unit: NUL and lone surrogates included (what a model or an MCP server may name a tool). */
const anyText = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength });

const check = (actor: Actor, session: string, tool: string, args: Record<string, unknown>) =>
  ({
    actor,
    session_id: session,
    tool_call_id: randomUUID(),
    turn_id: randomUUID(),
    agent_id: 'main',
    source: 'web',
    tool_name: tool,
    arguments: args,
  }) as ParsedRequestOf<'approval.check'>;

/**
 * The audit log of automatic decisions, against Postgres. Its input is the model's: a tool name and
 * arguments are whatever the model (or an MCP server's catalogue) said. Nothing a check is given may
 * keep the log from being written, and nothing decided may go unwritten.
 */
describe('the approval audit, written to Postgres', () => {
  let ds: DataSource;
  const log = pino({ level: 'silent' });
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
  });
  afterAll(() => ds.destroy());

  const gateWith = (audit: AuditService) =>
    new GateService(
      { ruleSet: async () => RULES } as never,
      { activeScopes: async () => [] } as never,
      audit,
      {} as never,
      log,
    );

  it('writes every decision, its tool name exactly as checked, whatever code units it holds', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const session = randomUUID();
    const audit = new AuditService(new AuditRepository(ds), 10_000, log);
    const gate = gateWith(audit);
    const tools: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(anyText(40), fc.constantFrom('read_file', 'mcp__evil__\u0000', '\ud800', 'x\u0000y')),
        fc.dictionary(anyText(8), anyText(20), { maxKeys: 3 }),
        async (tool, args) => {
          tools.push(tool);
          await gate.check(check(actor, session, tool, args));
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    await audit.flush();
    const page = await audit.page(actor, session, 1, 1000);
    expect(page.total).toBe(tools.length);
    expect(page.items.map((i) => i.tool_name).sort()).toEqual([...tools].sort());
  });

  it('a row Postgres refuses is set aside with an error, and the rest of its batch is written', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const session = randomUUID();
    const repo = new AuditRepository(ds);
    const lines: Array<{ level: number; msg: string }> = [];
    const errors = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const audit = new AuditService(repo, 10_000, errors);
    const entry = (n: number, extra: Partial<AuditEntry> = {}): AuditEntry => ({
      userId: actor.userId,
      sessionId: session,
      toolCallId: randomUUID(),
      requestId: null,
      toolName: `tool_${n}`,
      argsDigest: 'sha256:0',
      decision: 'allow',
      by: 'rule',
      actorUserId: null,
      ruleId: null,
      note: null,
      ...extra,
    });
    // A value the table's CHECK refuses (a future decision an older schema does not know).
    for (let n = 0; n < 50; n++) audit.record(entry(n, n === 17 ? { decision: 'escalate' as never } : {}));
    await audit.flush();
    const page = await audit.page(actor, session, 1, 100);
    expect(page.total).toBe(49);
    expect(page.items.map((i) => i.tool_name)).not.toContain('tool_17');
    expect(audit.pending).toBe(0);
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, msg: 'an audit entry Postgres refused was set aside', toolName: 'tool_17' }),
    ]);
  });

  it('while Postgres cannot be written, keeps every entry up to its bound, then refuses tool calls; all are written after', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const session = randomUUID();
    const real = new AuditRepository(ds);
    let down = true;
    const repo = {
      insert: (entries: readonly AuditEntry[]) =>
        down
          ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))
          : real.insert(entries),
      page: real.page.bind(real),
    } as unknown as AuditRepository;
    const audit = new AuditService(repo, 10_000, log);
    const gate = gateWith(audit);
    for (let n = 0; n < AUDIT_MAX_BUFFER; n++) {
      const r = await gate.check(check(actor, session, 'read_file', { path: `f${n}` }));
      expect(r.decision).toBe('allow');
    }
    await audit.flush();
    expect(audit.pending).toBe(AUDIT_MAX_BUFFER);
    // Full: a call that would be allowed is refused, saying why; nothing already kept is dropped.
    const refused = await gate.check(check(actor, session, 'read_file', { path: 'one-more' }));
    expect(refused).toMatchObject({ decision: 'deny', by: 'policy' });
    expect(refused.reason).toMatch(/audit log cannot be written/);
    expect(audit.pending).toBe(AUDIT_MAX_BUFFER);
    down = false;
    await audit.flush();
    expect(audit.pending).toBe(0);
    const page = await audit.page(actor, session, 1, 1);
    expect(page.total).toBe(AUDIT_MAX_BUFFER);
    const r = await gate.check(check(actor, session, 'read_file', { path: 'after' }));
    expect(r.decision).toBe('allow');
  }, 60_000);
});
