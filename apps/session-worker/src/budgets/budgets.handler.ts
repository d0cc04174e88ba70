import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { BudgetsService } from './budgets.service';

/** NATS edge of the budgets (the gateway's routes): parse (the Bus does), make one call. */
@Injectable()
export class BudgetsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly budgets: BudgetsService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('budgets.status', (r) => this.budgets.status(r.actor, r.user_id));
    this.bus.handle('budgets.set_user', (r) => this.budgets.setUser(r.actor, r.user_id, r.limits));
    this.bus.handle('budgets.near', (r) => this.budgets.near(r.actor, r.min_percent));
  }
}
