import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { ApprovalRuleDto, ApprovalRuleInput, ApprovalRulePatch, ruleName } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RULES_MAX_AGE_MS } from '../config';
import { ApprovalError } from '../errors';
import { ApprovalEventsPublisher } from '../events/approval-events.publisher';
import { neverAllows } from './allow-reach';
import { BUILT_IN_RULE_IDS, BUILT_IN_RULES } from './rule-engine';
import { RuleCompileError, RuleSet, validateRule } from './rule-set';
import { RuleFields, RulesRepository, StoredRule } from './rules.repository';

/** Without configuration (unit tests): `SKALD_RULES_MAX_AGE_MS`'s default. */
const DEFAULT_MAX_AGE_MS = 5000;

interface CachedRules {
  set: RuleSet;
  version: string;
  /** When the version was last confirmed against Postgres. */
  checkedAt: number;
}

/**
 * The rule set, compiled and cached so that `approval.check` does not touch Postgres: a change
 * reaches every replica at once through the `approval.rules.changed` broadcast; a lost NATS
 * connection (a broadcast may have been missed) drops it; and a broadcast lost otherwise, or a
 * change made in SQL, is seen within `maxAgeMs` (5 s): trusted for 70 % of it, then re-validated in
 * the background, and past it a check waits for the re-validation. Re-validating reads one version
 * row that a trigger bumps on every change; the rules are read and compiled again only when it
 * moved, so a thousand rules cost nothing between changes.
 */
@Injectable()
export class RulesService implements OnModuleInit, OnModuleDestroy {
  private cache: CachedRules | null = null;
  private refreshing: { gen: number; done: Promise<RuleSet> } | null = null;
  private generation = 0;
  private readonly maxAgeMs: number;
  private readonly freshMs: number;
  private unwatchGaps?: () => void;

  constructor(
    private readonly repo: RulesRepository,
    private readonly bus: Bus,
    private readonly events: ApprovalEventsPublisher,
    @Optional() @Inject(RULES_MAX_AGE_MS) maxAgeMs?: number,
  ) {
    this.maxAgeMs = maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.freshMs = Math.floor(this.maxAgeMs * 0.7);
  }

  onModuleInit(): void {
    this.bus.subscribe('approvalRulesChanged', () => this.invalidate());
    this.unwatchGaps = this.bus.onConnectionGap(() => this.invalidate());
  }

  onModuleDestroy(): void {
    this.unwatchGaps?.();
  }

  invalidate(): void {
    this.generation++;
    this.cache = null;
  }

  async ruleSet(): Promise<RuleSet> {
    const age = this.cache ? Date.now() - this.cache.checkedAt : Infinity;
    if (this.cache && age < this.freshMs) return this.cache.set;
    if (this.cache && age < this.maxAgeMs) {
      this.refresh().catch(() => undefined);
      return this.cache.set;
    }
    return this.refresh();
  }

  private refresh(): Promise<RuleSet> {
    // A refresh that started before an invalidation may read the old rules: do not share it.
    if (this.refreshing && this.refreshing.gen === this.generation) return this.refreshing.done;
    const gen = this.generation;
    const started = Date.now();
    const done = (async () => {
      const version = await this.repo.version();
      const cached = this.cache;
      if (cached && cached.version === version) {
        if (gen === this.generation) cached.checkedAt = started;
        return cached.set;
      }
      const set = new RuleSet(await this.repo.listAll());
      if (gen === this.generation) this.cache = { set, version, checkedAt: started };
      return set;
    })().finally(() => {
      if (this.refreshing?.done === done) this.refreshing = null;
    });
    this.refreshing = { gen, done };
    return done;
  }

  /** The built-in rules (code, read-only) first, then the stored ones in evaluation order. */
  async list(): Promise<ApprovalRuleDto[]> {
    return [...BUILT_IN_RULE_DTOS, ...(await this.repo.listAll()).map(toRuleDto)];
  }

  /** A rule created without a name is called by what it is (`ruleName`). */
  async create(input: ApprovalRuleInput): Promise<ApprovalRuleDto> {
    const fields = toFields(input);
    checkRule(fields);
    const rule = await this.repo.create(fields);
    this.changed();
    return toRuleDto(rule);
  }

  async update(id: string, patch: ApprovalRulePatch): Promise<ApprovalRuleDto> {
    refuseBuiltIn(id);
    const current = await this.repo.find(id);
    if (!current) throw new ApprovalError('not_found', 'no such rule');
    const fields = toFields({ ...fromRule(current), ...patch });
    checkRule(fields);
    const rule = await this.repo.update(id, fields);
    if (!rule) throw new ApprovalError('not_found', 'no such rule');
    this.changed();
    return toRuleDto(rule);
  }

  async delete(id: string): Promise<void> {
    refuseBuiltIn(id);
    if (!(await this.repo.delete(id))) throw new ApprovalError('not_found', 'no such rule');
    this.changed();
  }

  private changed(): void {
    this.invalidate();
    this.events.rulesChanged();
  }
}

/** Built-in rules are code: the console shows them, nobody edits or deletes them. */
function refuseBuiltIn(id: string): void {
  if (BUILT_IN_RULE_IDS.has(id))
    throw new ApprovalError('conflict', 'built-in rule: it is part of the gate and cannot be changed or deleted');
}

/** When the built-in rules took over from their seed rows (a fixed date: they have no row). */
const BUILT_IN_SINCE = '2025-12-01T00:00:00.000Z';
const BUILT_IN_RULE_DTOS: readonly ApprovalRuleDto[] = BUILT_IN_RULES.map((r) => ({
  id: r.id,
  name: r.name,
  tool_pattern: r.toolPattern,
  path_pattern: r.pathPattern,
  command_pattern: null,
  agent_id: null,
  source: null,
  security_group: null,
  action: r.action,
  priority: -1,
  note: r.note,
  is_seed: false,
  built_in: true,
  applies: r.applies,
  created_at: BUILT_IN_SINCE,
  updated_at: BUILT_IN_SINCE,
}));

function checkRule(f: RuleFields): void {
  try {
    validateRule(f);
  } catch (e) {
    if (e instanceof RuleCompileError) throw new ApprovalError('invalid_input', e.message, e.field);
    throw e;
  }
}

function fromRule(r: StoredRule): ApprovalRuleInput {
  return {
    name: r.name,
    tool_pattern: r.toolPattern,
    path_pattern: r.pathPattern,
    command_pattern: r.commandPattern,
    agent_id: r.agentId,
    source: r.source,
    security_group: r.securityGroup,
    action: r.action as ApprovalRuleInput['action'],
    priority: r.priority,
    note: r.note,
  };
}

function toFields(i: ApprovalRuleInput): RuleFields {
  const f = {
    toolPattern: i.tool_pattern.trim(),
    pathPattern: i.path_pattern?.trim() || null,
    commandPattern: i.command_pattern?.trim() || null,
    agentId: i.agent_id ?? null,
    source: i.source ?? null,
    securityGroup: i.security_group ?? null,
    action: i.action,
    priority: i.priority,
    note: i.note ?? null,
  };
  const name =
    i.name ??
    ruleName({
      action: f.action,
      tool_pattern: f.toolPattern,
      path_pattern: f.pathPattern,
      command_pattern: f.commandPattern,
      note: f.note,
    });
  return { name, ...f };
}

export function toRuleDto(r: StoredRule): ApprovalRuleDto {
  const never = r.action === 'allow' && r.commandPattern ? neverAllows(r.commandPattern) : null;
  return {
    id: r.id,
    name: r.name,
    tool_pattern: r.toolPattern,
    path_pattern: r.pathPattern,
    command_pattern: r.commandPattern,
    agent_id: r.agentId,
    source: r.source,
    security_group: r.securityGroup,
    action: r.action as ApprovalRuleDto['action'],
    priority: r.priority,
    note: r.note,
    is_seed: r.isSeed,
    ...(never ? { never_allows: never } : {}),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}
