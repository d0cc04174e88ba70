import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Owned by the gateway. */
@Entity({ name: 'users' })
export class UserEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') email!: string;
  @Column('text', { name: 'password_hash' }) passwordHash!: string;
  @Column('text') role!: 'user' | 'admin';
  @Column('boolean') disabled!: boolean;
  @Column('integer', { name: 'token_version' }) tokenVersion!: number;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}

@Entity({ name: 'api_tokens' })
export class ApiTokenEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('text') name!: string;
  @Column('text', { name: 'token_hash' }) tokenHash!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'last_used_at', nullable: true }) lastUsedAt!: Date | null;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
}

@Entity({ name: 'ws_tickets' })
export class WsTicketEntity {
  @PrimaryColumn('text', { name: 'ticket_hash' }) ticketHash!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt!: Date;
  @Column('timestamptz', { name: 'used_at', nullable: true }) usedAt!: Date | null;
  @Column('integer', { name: 'token_version', nullable: true }) tokenVersion!: number | null;
  @Column('timestamptz', { name: 'credential_expires_at', nullable: true }) credentialExpiresAt!: Date | null;
  @Column('uuid', { name: 'api_token_id', nullable: true }) apiTokenId!: string | null;
}

export const IDENTITY_ENTITIES = [UserEntity, ApiTokenEntity, WsTicketEntity];
