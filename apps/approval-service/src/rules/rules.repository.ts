import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ApprovalRuleEntity } from '@skald/persistence';
import { Rule } from './rule-engine';

@Injectable()
export class RulesRepository {
  constructor(private readonly ds: DataSource) {}

  async listAll(): Promise<Rule[]> {
    const rows = await this.ds.getRepository(ApprovalRuleEntity).find({ order: { priority: 'ASC', ord: 'ASC' } });
    return rows.map(toRule);
  }
}

function toRule(r: ApprovalRuleEntity): Rule {
  return {
    id: r.id,
    toolPattern: r.toolPattern,
    pathPattern: r.pathPattern,
    commandPattern: r.commandPattern,
    agentId: r.agentId,
    source: r.source,
    securityGroup: r.securityGroup,
    action: r.action,
    priority: r.priority,
    ord: Number(r.ord),
  };
}
