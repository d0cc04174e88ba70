import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { UserSettingsRepository } from '../settings/user-settings.repository';
import { SessionCommandsService } from './session-commands.service';

/** NATS edge of the slash commands the worker answers, and of the user's home source. */
@Injectable()
export class CommandsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly commands: SessionCommandsService,
    private readonly settings: UserSettingsRepository,
  ) {}

  onModuleInit(): void {
    this.bus.handle('session.command', (r) => this.commands.run(r.actor, r.source, r.command, r.args));
    this.bus.handle('session.home_source', async (r) => ({
      source: await this.settings.homeSource({ userId: r.actor.userId }),
    }));
  }
}
