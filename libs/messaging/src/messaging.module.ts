import { DynamicModule, Inject, Injectable, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { BusLogger, BusOptions, NatsBus } from './bus';
import { Bus } from './bus-port';

export const BUS_OPTIONS = Symbol('BUS_OPTIONS');

interface Readiness {
  register(name: string, check: () => void): void;
}

/** Registers the NATS readiness check and drains the connection last on shutdown. */
@Injectable()
class BusLifecycle implements OnApplicationShutdown, OnModuleInit {
  constructor(
    private readonly bus: Bus,
    @Inject(BUS_OPTIONS) private readonly options: { readiness?: Readiness },
  ) {}
  onModuleInit(): void {
    this.options.readiness?.register('nats', () => {
      if (!this.bus.connected) throw new Error('NATS disconnected');
    });
  }
  async onApplicationShutdown(): Promise<void> {
    await this.bus.drain();
  }
}

/** One NATS connection per app, typed by `@skald/contracts`. */
@Module({})
export class MessagingModule {
  static forRoot(options: BusOptions & { logger: BusLogger; readiness?: Readiness }): DynamicModule {
    return {
      module: MessagingModule,
      global: true,
      providers: [
        { provide: BUS_OPTIONS, useValue: options },
        { provide: Bus, useFactory: () => NatsBus.connect(options, options.logger) },
        BusLifecycle,
      ],
      exports: [Bus],
    };
  }
}
