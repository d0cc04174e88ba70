import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Owned by the approval service. */
@Entity({ name: 'approval_rules' })
export class ApprovalRuleEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
  @Column('text', { name: 'tool_pattern' }) toolPattern!: string;
  @Column('text', { name: 'path_pattern', nullable: true }) pathPattern!: string | null;
  @Column('text', { name: 'command_pattern', nullable: true }) commandPattern!: string | null;
  @Column('text', { name: 'agent_id', nullable: true }) agentId!: string | null;
  @Column('text', { nullable: true }) source!: string | null;
  @Column('text', { name: 'security_group', nullable: true }) securityGroup!: string | null;
  @Column('text') action!: 'allow' | 'deny' | 'require';
  @Column('integer') priority!: number;
  @Column('text', { nullable: true }) note!: string | null;
  @Column('boolean', { name: 'is_seed' }) isSeed!: boolean;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}

@Entity({ name: 'approval_requests' })
export class ApprovalRequestEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') kind!: 'approval' | 'clarification';
  @Column('uuid', { name: 'tool_call_id' }) toolCallId!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('text') source!: string;
  @Column('text', { name: 'tool_name' }) toolName!: string;
  @Column('text') arguments!: string;
  @Column('text', { nullable: true }) preview!: string | null;
  @Column('text', { nullable: true }) question!: string | null;
  @Column('text') status!: 'pending' | 'approved' | 'rejected' | 'answered' | 'cancelled';
  @Column('text', { nullable: true }) note!: string | null;
  @Column('text', { nullable: true }) answer!: string | null;
  @Column('uuid', { name: 'actor_user_id', nullable: true }) actorUserId!: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'resolved_at', nullable: true }) resolvedAt!: Date | null;
  @Column('text', { name: 'cancel_reason', nullable: true }) cancelReason!: string | null;
  @Column('uuid', { name: 'turn_id', nullable: true }) turnId!: string | null;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
}

/** A session bypass: Require → Allow for the session while active (never Deny). */
@Entity({ name: 'approval_bypasses' })
export class ApprovalBypassEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('jsonb') scope!: unknown;
  @Column('timestamptz', { name: 'expires_at', nullable: true }) expiresAt!: Date | null;
  @Column('uuid', { name: 'created_by' }) createdBy!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
}

/** One decision, automatic or human. */
@Entity({ name: 'approval_audit' })
export class ApprovalAuditEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
  @Column('timestamptz') at!: Date;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('uuid', { name: 'session_id', nullable: true }) sessionId!: string | null;
  @Column('uuid', { name: 'tool_call_id', nullable: true }) toolCallId!: string | null;
  @Column('uuid', { name: 'request_id', nullable: true }) requestId!: string | null;
  @Column('text', { name: 'tool_name' }) toolName!: string;
  @Column('text', { name: 'args_digest' }) argsDigest!: string;
  @Column('text') decision!: string;
  @Column('text') by!: string;
  @Column('uuid', { name: 'actor_user_id', nullable: true }) actorUserId!: string | null;
  @Column('uuid', { name: 'rule_id', nullable: true }) ruleId!: string | null;
  @Column('text', { nullable: true }) note!: string | null;
}

/** The tools offered to a user's model (per user, bounded), so that the security console can gate them. */
@Entity({ name: 'known_tools' })
export class KnownToolEntity {
  @PrimaryColumn('uuid', { name: 'user_id' }) userId!: string;
  @PrimaryColumn('text') name!: string;
  @Column('text') category!: string;
  @Column('timestamptz', { name: 'first_seen_at' }) firstSeenAt!: Date;
  @Column('timestamptz', { name: 'last_seen_at' }) lastSeenAt!: Date;
}

export const APPROVAL_ENTITIES = [
  ApprovalRuleEntity,
  ApprovalRequestEntity,
  ApprovalBypassEntity,
  ApprovalAuditEntity,
  KnownToolEntity,
];
