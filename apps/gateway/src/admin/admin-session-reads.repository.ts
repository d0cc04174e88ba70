import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import type { AdminSessionReadsRow } from '@skald/persistence';

/** One admin's read of another user's conversation, as `admin_session_reads` records it. */
export type AdminSessionRead = Pick<AdminSessionReadsRow, 'read'> & {
  adminUserId: string;
  ownerUserId: string;
  sessionId: string;
};

/** `admin_session_reads` (the gateway's): append-only, so this repository only inserts. */
@Injectable()
export class AdminSessionReadsRepository {
  constructor(private readonly ds: Database) {}

  async record(r: AdminSessionRead): Promise<void> {
    await this.ds.query(
      `INSERT INTO admin_session_reads (admin_user_id, owner_user_id, session_id, read) VALUES ($1, $2, $3, $4)`,
      [r.adminUserId, r.ownerUserId, r.sessionId, r.read],
    );
  }
}
