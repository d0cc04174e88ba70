import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryRows } from '@skald/persistence';

@Injectable()
export class KnownToolsRepository {
  constructor(private readonly ds: DataSource) {}

  async upsert(tools: ReadonlyArray<{ name: string; category: string }>): Promise<void> {
    if (tools.length === 0) return;
    await queryRows(
      this.ds,
      `INSERT INTO known_tools (name, category)
       SELECT * FROM unnest($1::text[], $2::text[])
       ON CONFLICT (name) DO UPDATE SET last_seen_at = now()`,
      [tools.map((t) => t.name), tools.map((t) => t.category)],
    );
  }

  async list(): Promise<Array<{ name: string; category: string }>> {
    return queryRows(this.ds, `SELECT name, category FROM known_tools ORDER BY name LIMIT 5000`);
  }
}
