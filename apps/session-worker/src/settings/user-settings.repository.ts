import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { UserSettingsRow } from '@skald/persistence';

/** The home source that gets notifications until `/sethome` names another. */
export const DEFAULT_HOME_SOURCE = 'web';

/** `user_settings`, scoped by user. */
@Injectable()
export class UserSettingsRepository {
  constructor(private readonly ds: Database) {}

  async homeSource(scope: { userId: string }): Promise<string> {
    const rows = await queryRows<Pick<UserSettingsRow, 'home_source'>>(
      this.ds,
      `SELECT home_source FROM user_settings WHERE user_id = $1`,
      [scope.userId],
    );
    return rows[0]?.home_source ?? DEFAULT_HOME_SOURCE;
  }

  async setHomeSource(scope: { userId: string }, source: string): Promise<void> {
    await this.ds.query(
      `INSERT INTO user_settings (user_id, home_source) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE SET home_source = EXCLUDED.home_source, updated_at = now()`,
      [scope.userId, source],
    );
  }
}
