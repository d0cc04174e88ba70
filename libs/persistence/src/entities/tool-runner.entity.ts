import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Owned by the tool runner: a memory document (`user-memory/<path>` or `shared-memory/<path>`). */
@Entity({ name: 'memory_documents' })
export class MemoryDocumentEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') scope!: 'user' | 'shared';
  @Column('uuid', { name: 'user_id', nullable: true }) userId!: string | null;
  @Column('text') path!: string;
  @Column('text') content!: string;
  @Column('uuid', { name: 'updated_by', nullable: true }) updatedBy!: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}

/** Owned by the tool runner: one tool call it ran, keyed by tool call id. */
@Entity({ name: 'tool_call_results' })
export class ToolCallResultEntity {
  @PrimaryColumn('uuid', { name: 'tool_call_id' }) toolCallId!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('text', { name: 'tool_name' }) toolName!: string;
  @Column('text') status!: 'running' | 'done' | 'failed' | 'cancelled';
  @Column('text', { nullable: true }) reply!: string | null;
  @Column('text') runner!: string;
  @Column('timestamptz', { name: 'started_at' }) startedAt!: Date;
  @Column('timestamptz', { name: 'heartbeat_at' }) heartbeatAt!: Date;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt!: Date | null;
}

export const TOOL_RUNNER_ENTITIES = [MemoryDocumentEntity, ToolCallResultEntity];
