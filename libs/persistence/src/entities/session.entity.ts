import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Owned by the session worker. Turn writes go through the fenced store (raw SQL); these map rows for reads. */
@Entity({ name: 'sessions' })
export class SessionEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('text') source!: string;
  @Column('text', { name: 'agent_id' }) agentId!: string;
  @Column('boolean', { name: 'is_interactive' }) isInteractive!: boolean;
  @Column('boolean', { name: 'is_ephemeral' }) isEphemeral!: boolean;
  @Column('boolean', { name: 'auto_deny_approvals' }) autoDenyApprovals!: boolean;
  @Column('boolean', { name: 'is_active' }) isActive!: boolean;
  @Column('uuid', { name: 'scratchpad_session_id', nullable: true }) scratchpadSessionId!: string | null;
  @Column('text', { name: 'security_group', nullable: true }) securityGroup!: string | null;
  @Column('jsonb', { name: 'run_context' }) runContext!: Record<string, unknown>;
  @Column('text', { name: 'client_pin', nullable: true }) clientPin!: string | null;
  @Column('text', { name: 'turn_state' }) turnState!: 'running' | 'parked' | 'finished';
  @Column('uuid', { name: 'turn_id', nullable: true }) turnId!: string | null;
  @Column('timestamptz', { name: 'stop_requested_at', nullable: true }) stopRequestedAt!: Date | null;
  @Column('bigint', { name: 'last_seq' }) lastSeq!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}

@Entity({ name: 'session_leases' })
export class SessionLeaseEntity {
  @PrimaryColumn('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('text', { nullable: true }) owner!: string | null;
  @Column('bigint') epoch!: string;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt!: Date;
  @Column('timestamptz', { name: 'acquired_at' }) acquiredAt!: Date;
}

@Entity({ name: 'stack_frames' })
export class StackFrameEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'parent_frame_id', nullable: true }) parentFrameId!: string | null;
  @Column('uuid', { name: 'parent_tool_call_id', nullable: true }) parentToolCallId!: string | null;
  @Column('text', { name: 'agent_id' }) agentId!: string;
  @Column('integer') depth!: number;
  @Column('text') status!: 'active' | 'closed';
  @Column('text', { nullable: true }) client!: string | null;
  @Column('text', { nullable: true }) result!: string | null;
  @Column('bigint') epoch!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'closed_at', nullable: true }) closedAt!: Date | null;
}

@Entity({ name: 'chat_history' })
export class ChatMessageEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'frame_id' }) frameId!: string;
  @Column('text') role!: 'user' | 'agent' | 'assistant';
  @Column('text') content!: string;
  @Column('text', { nullable: true }) reasoning!: string | null;
  @Column('boolean', { name: 'is_synthetic' }) isSynthetic!: boolean;
  @Column('text') status!: 'ok' | 'failed';
  @Column('jsonb', { nullable: true }) metadata!: Record<string, unknown> | null;
  @Column('text', { name: 'client_message_id', nullable: true }) clientMessageId!: string | null;
  @Column('integer', { name: 'input_tokens', nullable: true }) inputTokens!: number | null;
  @Column('integer', { name: 'output_tokens', nullable: true }) outputTokens!: number | null;
  @Column('bigint') epoch!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

@Entity({ name: 'tool_calls' })
export class ToolCallEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'frame_id' }) frameId!: string;
  @Column('uuid', { name: 'message_id' }) messageId!: string;
  @Column('integer') idx!: number;
  @Column('text', { name: 'llm_call_id' }) llmCallId!: string;
  @Column('text') name!: string;
  @Column('text') arguments!: string;
  @Column('text') status!: string;
  @Column('text', { nullable: true }) result!: string | null;
  @Column('text', { name: 'result_type', nullable: true }) resultType!: string | null;
  @Column('text', { nullable: true }) error!: string | null;
  @Column('uuid', { name: 'request_id', nullable: true }) requestId!: string | null;
  @Column('uuid', { name: 'child_frame_id', nullable: true }) childFrameId!: string | null;
  @Column('text', { name: 'restart_hint', nullable: true }) restartHint!: string | null;
  @Column('bigint') epoch!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt!: Date | null;
}

@Entity({ name: 'session_inbox' })
export class InboxItemEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column({ type: 'bigint', insert: false, update: false }) ord!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('text', { name: 'client_message_id' }) clientMessageId!: string;
  @Column('text') content!: string;
  @Column('jsonb', { nullable: true }) attachments!: unknown[] | null;
  @Column('text') delivery!: 'steer' | 'queue' | 'interrupt';
  @Column('boolean', { name: 'is_synthetic' }) isSynthetic!: boolean;
  @Column('text') status!: 'queued' | 'entered' | 'discarded';
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'settled_at', nullable: true }) settledAt!: Date | null;
}

@Entity({ name: 'session_events' })
export class SessionEventEntity {
  @PrimaryColumn('uuid', { name: 'session_id' }) sessionId!: string;
  @PrimaryColumn('bigint') seq!: string;
  @Column('text') type!: string;
  @Column('text') payload!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

export const SESSION_ENTITIES = [
  SessionEntity,
  SessionLeaseEntity,
  StackFrameEntity,
  ChatMessageEntity,
  ToolCallEntity,
  InboxItemEntity,
  SessionEventEntity,
];
