// The zod enums of @skald/contracts that must exist at run time (they validate the wire) and list the same values
// as a CHECK constraint: each is equal, both ways, to the union rows.ts was generated with from that constraint.
// A migration that changes the list, or an edit of the enum alone, fails `npm run typecheck` on the line below
// naming the column, and this spec at run time with the values that differ.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import {
  AuditItem,
  Delivery,
  GateBy,
  JobSessionStartRequest,
  McpServerStatus,
  McpTransport,
  Role,
  RuleAction,
  ToolCallStatus,
  type MemoryScope,
} from '@skald/contracts';
import type {
  ApprovalAuditRow,
  ApprovalRulesRow,
  McpServersRow,
  MemoryDocumentsRow,
  ScheduledJobsRow,
  SessionInboxRow,
  SessionsRow,
  ToolCallsRow,
  UsersRow,
} from './rows';

/** True when A and B are the same type (each assignable to the other, no `any` on either side). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

type _ContractsAreTheChecks = [
  Assert<Equal<Role, UsersRow['role']>>,
  Assert<Equal<Role, SessionsRow['owner_role']>>,
  Assert<Equal<Role, ScheduledJobsRow['owner_role']>>,
  Assert<Equal<Delivery, SessionInboxRow['delivery']>>,
  Assert<Equal<ToolCallStatus, ToolCallsRow['status']>>,
  Assert<Equal<McpTransport, McpServersRow['transport']>>,
  Assert<Equal<McpServerStatus, McpServersRow['status']>>,
  Assert<Equal<(typeof RuleAction)['options'][number], ApprovalRulesRow['action']>>,
  Assert<Equal<GateBy, ApprovalAuditRow['by']>>,
  Assert<Equal<(typeof AuditItem)['shape']['decision']['options'][number], ApprovalAuditRow['decision']>>,
  Assert<Equal<(typeof JobSessionStartRequest)['shape']['kind']['options'][number], ScheduledJobsRow['kind']>>,
  Assert<Equal<MemoryScope, MemoryDocumentsRow['scope']>>,
];

// The check can fail: one literal more or less on either side does not compile.
// @ts-expect-error a union with a value the constraint lacks
type _Wider = Assert<Equal<Role | 'owner', UsersRow['role']>>;
// @ts-expect-error a union without a value the constraint allows
type _Narrower = Assert<Equal<'user', UsersRow['role']>>;

/** The string literals of `interface.column` in rows.ts, as the TypeScript parser reads the file. */
function generatedUnion(rowInterface: string, column: string): string[] {
  const path = join(__dirname, 'rows.ts');
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022);
  const decl = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === rowInterface,
  );
  const property = decl?.members.find(
    (m): m is ts.PropertySignature => ts.isPropertySignature(m) && m.name.getText(source) === column,
  );
  if (property?.type === undefined) throw new Error(`rows.ts has no ${rowInterface}.${column}`);
  const members = ts.isUnionTypeNode(property.type) ? property.type.types : [property.type];
  return members.flatMap((m) => (ts.isLiteralTypeNode(m) && ts.isStringLiteral(m.literal) ? [m.literal.text] : []));
}

describe('contract enums and the CHECK constraints they copy', () => {
  it.each([
    ['Role', 'UsersRow', 'role', Role.options],
    ['Role', 'SessionsRow', 'owner_role', Role.options],
    ['Role', 'ScheduledJobsRow', 'owner_role', Role.options],
    ['Delivery', 'SessionInboxRow', 'delivery', Delivery.options],
    ['ToolCallStatus', 'ToolCallsRow', 'status', ToolCallStatus.options],
    ['McpTransport', 'McpServersRow', 'transport', McpTransport.options],
    ['McpServerStatus', 'McpServersRow', 'status', McpServerStatus.options],
    ['RuleAction', 'ApprovalRulesRow', 'action', RuleAction.options],
    ['GateBy', 'ApprovalAuditRow', 'by', GateBy.options],
    ['AuditItem.decision', 'ApprovalAuditRow', 'decision', AuditItem.shape.decision.options],
    ['JobSessionStartRequest.kind', 'ScheduledJobsRow', 'kind', JobSessionStartRequest.shape.kind.options],
  ] as const)('%s holds the values of %s.%s', (_name, rowInterface, column, options) => {
    expect([...options].sort()).toEqual(generatedUnion(rowInterface, column).sort());
  });
});
