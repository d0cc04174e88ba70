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
  HumanRequestStatus,
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
  ApprovalRequestsRow,
  ApprovalRulesRow,
  McpServersRow,
  MemoryDocumentsRow,
  ScheduledJobsRow,
  SessionInboxRow,
  SessionsRow,
  ToolCallsRow,
  UsersRow,
} from './rows';
import type { AssertTrue, SameType } from '../same-type';

type _ContractsAreTheChecks = [
  AssertTrue<SameType<Role, UsersRow['role']>>,
  AssertTrue<SameType<Role, SessionsRow['owner_role']>>,
  AssertTrue<SameType<Role, ScheduledJobsRow['owner_role']>>,
  AssertTrue<SameType<Delivery, SessionInboxRow['delivery']>>,
  AssertTrue<SameType<ToolCallStatus, ToolCallsRow['status']>>,
  AssertTrue<SameType<McpTransport, McpServersRow['transport']>>,
  AssertTrue<SameType<McpServerStatus, McpServersRow['status']>>,
  AssertTrue<SameType<(typeof RuleAction)['options'][number], ApprovalRulesRow['action']>>,
  AssertTrue<SameType<GateBy, ApprovalAuditRow['by']>>,
  AssertTrue<SameType<HumanRequestStatus, ApprovalRequestsRow['status']>>,
  AssertTrue<SameType<(typeof AuditItem)['shape']['decision']['options'][number], ApprovalAuditRow['decision']>>,
  AssertTrue<SameType<(typeof JobSessionStartRequest)['shape']['kind']['options'][number], ScheduledJobsRow['kind']>>,
  AssertTrue<SameType<MemoryScope, MemoryDocumentsRow['scope']>>,
];

// The check can fail: one literal more or less on either side does not compile.
// @ts-expect-error a union with a value the constraint lacks
type _Wider = AssertTrue<SameType<Role | 'owner', UsersRow['role']>>;
// @ts-expect-error a union without a value the constraint allows
type _Narrower = AssertTrue<SameType<'user', UsersRow['role']>>;

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
    ['HumanRequestStatus', 'ApprovalRequestsRow', 'status', HumanRequestStatus.options],
    ['AuditItem.decision', 'ApprovalAuditRow', 'decision', AuditItem.shape.decision.options],
    ['JobSessionStartRequest.kind', 'ScheduledJobsRow', 'kind', JobSessionStartRequest.shape.kind.options],
  ] as const)('%s holds the values of %s.%s', (_name, rowInterface, column, options) => {
    expect([...options].sort()).toEqual(generatedUnion(rowInterface, column).sort());
  });
});
