import { Injectable, OnModuleInit } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { AuditService } from './audit/audit.service';
import { BypassesService } from './bypasses/bypasses.service';
import { adminOnly } from './errors';
import { RulesService } from './rules/rules.service';

const requireAdmin = (actor: Actor): void => {
  if (actor.role !== 'admin') throw adminOnly();
};

/** NATS edge of the security console: rules (admin only), bypasses and the audit log (scoped by actor). */
@Injectable()
export class AdminHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly rules: RulesService,
    private readonly bypasses: BypassesService,
    private readonly audit: AuditService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('approval.rules.list', async (req) => {
      requireAdmin(req.actor);
      return { items: await this.rules.list() };
    });
    this.bus.handle('approval.rules.create', (req) => {
      requireAdmin(req.actor);
      return this.rules.create(req.rule);
    });
    this.bus.handle('approval.rules.update', (req) => {
      requireAdmin(req.actor);
      return this.rules.update(req.id, req.patch);
    });
    this.bus.handle('approval.rules.delete', async (req) => {
      requireAdmin(req.actor);
      await this.rules.delete(req.id);
      return { deleted: true as const };
    });
    this.bus.handle('approval.bypasses.list', async (req) => ({
      items: await this.bypasses.list(req.actor, req.session_id),
    }));
    this.bus.handle('approval.bypasses.create', async (req) => ({
      id: await this.bypasses.open(req.actor, req.session_id, req.scope, req.secs),
    }));
    this.bus.handle('approval.bypasses.delete', async (req) => {
      await this.bypasses.revoke(req.actor, req.id);
      return { deleted: true as const };
    });
    this.bus.handle('approval.audit', ({ actor, ...q }) => this.audit.page(q, actor));
  }
}
