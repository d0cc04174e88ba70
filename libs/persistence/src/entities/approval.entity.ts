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
  @Column('jsonb', { nullable: true }) preview!: Record<string, unknown> | null;
  @Column('jsonb', { nullable: true }) question!: Record<string, unknown> | null;
  @Column('text') status!: 'pending' | 'approved' | 'rejected' | 'answered' | 'cancelled';
  @Column('text', { nullable: true }) note!: string | null;
  @Column('text', { nullable: true }) answer!: string | null;
  @Column('uuid', { name: 'actor_user_id', nullable: true }) actorUserId!: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'resolved_at', nullable: true }) resolvedAt!: Date | null;
}

export const APPROVAL_ENTITIES = [ApprovalRuleEntity, ApprovalRequestEntity];
