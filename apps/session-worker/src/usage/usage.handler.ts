import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { UsageReportService } from './usage-report.service';

/** NATS edge of the usage reports. */
@Injectable()
export class UsageHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly usage: UsageReportService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('usage.report', (r) => this.usage.report(r));
  }
}
