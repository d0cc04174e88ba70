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
    const page = await allRows(audit, actor, session);
    expect(page.total).toBe(tools.length);
    expect(page.items.map((i) => i.tool_name).sort()).toEqual([...tools].sort());
  });

  it('filters by user, session, tool, decision and time, pages by keyset without gaps or repeats, names rules', async () => {
    const alice: Actor = { userId: randomUUID(), role: 'user' };
    const bob: Actor = { userId: randomUUID(), role: 'user' };
    const admin: Actor = { userId: randomUUID(), role: 'admin' };
    const session = randomUUID();
    const repo = new AuditRepository(ds);
    const audit = new AuditService(repo, 10_000, log);
    const [stored] = await ds.query<Array<{ id: string }>>(
      `INSERT INTO approval_rules (id, tool_pattern, command_pattern, action, priority, note, name)
       VALUES (gen_random_uuid(), 'execute_cmd', 'rm *', 'deny', 999999, 'no removals', 'removals are refused') RETURNING id`,
    );
    const gone = randomUUID();
    // an hour of its own in a far year: an admin's window holds this run's rows only
    const t0 = Date.parse('2030-01-01T00:00:00Z') + Math.floor(Math.random() * 1e6) * 3_600_000;
    const at = (min: number) => new Date(t0 + min * 60_000);
    const entry = (n: number, over: Partial<AuditEntry>): AuditEntry => ({
      userId: alice.userId,
      sessionId: session,
      toolCallId: randomUUID(),
      requestId: null,
      toolName: n % 2 ? 'execute_cmd' : 'read_file',
      argsDigest: 'sha256:0',
      decision: n % 3 ? 'allow' : 'deny',
      by: 'rule',
      actorUserId: null,
      ruleId: null,
      note: null,
      at: at(n),
      ...over,
    });
    // 30 of alice's (some at the same instant: the keyset's tie-break), 5 of bob's
    const rows = [
      ...Array.from({ length: 30 }, (_, n) =>
        entry(n, n === 3 ? { ruleId: stored.id } : n === 9 ? { ruleId: gone } : {}),
      ),
      ...Array.from({ length: 5 }, (_, n) => entry(n, { userId: bob.userId, sessionId: randomUUID(), at: at(0) })),
    ];
    rows[20] = { ...rows[20], at: at(19) };
    for (const r of rows) audit.record(r);
    await audit.flush();
    try {
      const walk = async (actor: Actor, q: Record<string, unknown>, limit: number) => {
        const seen: Awaited<ReturnType<AuditService['page']>>['items'] = [];
        let before: string | undefined;
        for (let n = 0; n < 100; n++) {
          const page = await audit.page({ limit, ...q, ...(before ? { before } : {}) }, actor);
          seen.push(...page.items);
          if (!page.has_more) return seen;
          before = page.items[page.items.length - 1].id;
        }
        throw new Error('did not end');
      };
      const all = await walk(alice, { session_id: session }, 7);
      expect(all).toHaveLength(30);
      expect(new Set(all.map((i) => i.id)).size).toBe(30);
      expect(all.map((i) => i.at)).toEqual([...all.map((i) => i.at)].sort().reverse());
      // each filter narrows exactly
      const deny = await walk(alice, { session_id: session, decision: 'deny', tool: 'execute_cmd' }, 50);
      expect(deny).toHaveLength(
        rows.slice(0, 30).filter((r) => r.decision === 'deny' && r.toolName === 'execute_cmd').length,
      );
      const window = await walk(alice, { since: at(10).toISOString(), until: at(20).toISOString() }, 3);
      expect(window.map((i) => i.at).every((a) => a >= at(10).toISOString() && a < at(20).toISOString())).toBe(true);
      // minutes 10 to 19, and the row moved to minute 19
      expect(window).toHaveLength(11);
      // an admin sees both users, or one by user_id; alice never sees bob's, nor pages through his row
      expect(await walk(admin, { since: at(0).toISOString(), until: at(30).toISOString() }, 50)).toHaveLength(35);
      expect(await walk(admin, { user_id: bob.userId }, 2)).toHaveLength(5);
      const bobs = (await audit.page({ user_id: bob.userId, limit: 1 }, admin)).items[0];
      expect((await audit.page({ before: bobs.id, limit: 50 }, alice)).items).toEqual([]);
      await expect(audit.page({ user_id: bob.userId, limit: 1 }, alice)).rejects.toMatchObject({
        body: { code: 'forbidden', field: 'user_id' },
      });
      // rules by name: a stored one by its name, a gone one as deleted
      const named = all.filter((i) => i.rule_id).map((i) => [i.rule_id, i.rule_name]);
      expect(named.sort()).toEqual(
        [
          [stored.id, 'removals are refused'],
          [gone, 'a deleted rule'],
        ].sort(),
      );
    } finally {
      await ds.query(`DELETE FROM approval_rules WHERE id = $1`, [stored.id]);
    }
  });

  it('a row Postgres refuses is set aside with an error, and the rest of its batch is written', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const session = randomUUID();
    const repo = new AuditRepository(ds);
    const lines: Array<{ level: number; msg: string }> = [];
    const errors = pino(
      { level: 'info' },
      { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) },
    );
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
    const page = await allRows(audit, actor, session);
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
    const page = await allRows(audit, actor, session);
    expect(page.total).toBe(AUDIT_MAX_BUFFER);
    const r = await gate.check(check(actor, session, 'read_file', { path: 'after' }));
    expect(r.decision).toBe('allow');
  }, 60_000);
});

/** Every audit row of the session, walked page by page (at most 200 pages of 200). */
async function allRows(audit: AuditService, actor: Actor, session: string) {
  const items: Awaited<ReturnType<AuditService['page']>>['items'] = [];
  let before: string | undefined;
  for (let n = 0; n < 200; n++) {
    const page = await audit.page({ session_id: session, limit: 200, ...(before ? { before } : {}) }, actor);
    items.push(...page.items);
    if (!page.has_more) return { items, total: items.length };
    before = page.items[page.items.length - 1]?.id;
  }
  throw new Error('more than 40,000 rows');
}
