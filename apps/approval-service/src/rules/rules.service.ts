import { Injectable } from '@nestjs/common';
import { Decision, decide, GateCall, Rule } from './rule-engine';
import { RulesRepository } from './rules.repository';

/** The rule set, cached for a short time so that `approval.check` does not hit Postgres each call. */
@Injectable()
export class RulesService {
  private cache: { rules: Rule[]; at: number } | null = null;
  private static readonly TTL_MS = 1000;

  constructor(private readonly repo: RulesRepository) {}

  async check(call: GateCall): Promise<Decision> {
    return decide(await this.rules(), call);
  }

  private async rules(): Promise<Rule[]> {
    if (this.cache && Date.now() - this.cache.at < RulesService.TTL_MS) return this.cache.rules;
    const rules = await this.repo.listAll();
    this.cache = { rules, at: Date.now() };
    return rules;
  }
}
