import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { CatalogService } from '../catalog/catalog.service';
import { GateService } from './gate.service';

/** NATS edge of the gate: `approval.check`, `approval.visible_tools`, `approval.rules.test`, `approval.tools`. */
@Injectable()
export class GateHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly gate: GateService,
    private readonly catalog: CatalogService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('approval.check', async (req) => {
      const d = await this.gate.check(req);
      return { decision: d.decision, rule_id: d.ruleId, reason: d.reason, by: d.by };
    });
    this.bus.handle('approval.rules.test', async (req) => {
      const d = await this.gate.test(req);
      return { decision: d.decision, rule_id: d.ruleId, reason: d.reason, by: d.by };
    });
    this.bus.handle('approval.visible_tools', async (req) => ({ visible: await this.gate.visibleTools(req) }));
    this.bus.handle('approval.tools', async (req) => ({ items: await this.catalog.list(req.actor) }));
  }
}
