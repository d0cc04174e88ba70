import { DynamicModule, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { createDataSource, DatabaseOptions } from './data-source';
import { Database } from './database';

@Injectable()
class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(private readonly ds: DataSource) {}
  async onApplicationShutdown(): Promise<void> {
    if (this.ds.isInitialized) await this.ds.destroy();
  }
}

/** The app's TypeORM DataSource (also as `Database`, see database.ts): its pool, transactions and readiness check. */
@Module({})
export class DatabaseModule {
  static forRoot(
    options: DatabaseOptions & { readiness?: { register(name: string, check: () => Promise<void>): void } },
  ): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      providers: [
        {
          provide: DataSource,
          useFactory: async () => {
            const ds = createDataSource(options);
            await ds.initialize();
            options.readiness?.register('postgres', async () => {
              await ds.query('SELECT 1');
            });
            return ds;
          },
        },
        { provide: Database, useExisting: DataSource },
        DatabaseLifecycle,
      ],
      exports: [DataSource, Database],
    };
  }
}
