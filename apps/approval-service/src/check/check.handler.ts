import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging';
import { RulesService } from '../rules/rules.service';

/** NATS edge: `approval.check` → the rule decision. */
@Injectable()
export class CheckHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly rules: RulesService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('approval.check', async (req) => {
      const d = await this.rules.check({
        toolName: req.tool_name,
        arguments: req.arguments,
        agentId: req.agent_id,
        source: req.source,
        securityGroup: req.security_group,
        workingDirectory: typeof req.arguments.workdir === 'string' ? req.arguments.workdir : undefined,
      });
      return { decision: d.decision, rule_id: d.ruleId, reason: d.reason };
    });
  }
}
