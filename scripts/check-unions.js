// The literal unions of the CHECK constraints: which text columns the database limits to a list of literals, and
// which CHECK constraints on a text column say something else (scripts/gen-rows.js names those in rows.ts, so a
// column left `string` is never silently so).
//
// The constraints come from the database (`pg_constraint`, each expression as `pg_get_expr` prints it), and each
// expression is read by PostgreSQL's own parser (libpg-query, the server's grammar compiled to WebAssembly), not by
// a pattern: a hand-written reader of SQL would be one more thing to get wrong. The shapes read, on a column `c` of
// type text or varchar, as PostgreSQL prints them:
//
//   c = ANY (ARRAY['a'::text, 'b'::text])       what `c IN ('a', 'b')` and `c = ANY (ARRAY['a', 'b'])` become
//   c = 'a'::text                               what `c IN ('a')` becomes
//   (c)::text = ANY ((ARRAY['a'::character varying, …])::text[])    the same on a varchar column
//   x OR y                                      the union of what x and y admit (`c = 'a' OR c = 'b'`)
//   c IS NULL                                   admits no value beyond NULL (`… OR c IS NULL`)
//   c IN ('a', 'b')                             as written, should a server ever print it so
//
// Anything else (a regular expression, a length, an AND, a NOT, a second column, an array literal '{a,b}', a
// constraint NOT VALID) is not a list of literals: the column stays `string` and the constraint is reported.
'use strict';

const { parse } = require('libpg-query');

/** Column types whose values are exactly the literals a constraint lists (char(n) pads them: not read). */
const LITERAL_TYPES = ['text', 'varchar'];

/**
 * @typedef {object} CheckOnColumn one CHECK constraint and one text column it names
 * @property {string} table
 * @property {string} column
 * @property {string} type the column's type (`pg_type.typname`)
 * @property {string} constraint
 * @property {string} expression the constraint's expression as the database prints it (`pg_get_expr(conbin, …)`)
 * @property {boolean} validated false for a constraint added NOT VALID: rows from before it are unchecked
 */

/**
 * @typedef {object} UnreadCheck a CHECK constraint on a text column that does not limit it to a list of literals
 * @property {string} table
 * @property {string} column
 * @property {string} constraint
 * @property {string} expression
 * @property {string} reason
 */

/**
 * @typedef {object} CheckUnions
 * @property {Map<string, string[]>} unions `table.column` → the literals it is limited to, in the constraint's order
 * @property {UnreadCheck[]} unread the constraints on a column with no union, by table, column and constraint
 */

/** @typedef {import('libpg-query').Node} Node */

/**
 * The last name of a type (`pg_catalog.varchar` → `varchar`), or undefined.
 * @param {import('libpg-query').TypeName | undefined} typeName
 */
const lastTypeName = (typeName) => {
  const last = typeName?.names?.at(-1);
  return last !== undefined && 'String' in last ? last.String.sval : undefined;
};

/**
 * Whether `node` is the column `column`, possibly cast to a text type (`(c)::text`, as printed for varchar).
 * @param {Node | undefined} node
 * @param {string} column
 * @returns {boolean}
 */
function isColumn(node, column) {
  if (node === undefined) return false;
  if ('TypeCast' in node)
    return LITERAL_TYPES.includes(lastTypeName(node.TypeCast.typeName) ?? '') && isColumn(node.TypeCast.arg, column);
  if (!('ColumnRef' in node)) return false;
  const fields = node.ColumnRef.fields ?? [];
  return fields.length === 1 && 'String' in fields[0] && fields[0].String.sval === column;
}

/**
 * The string a node is, a string constant possibly cast to a text type; undefined for anything else.
 * @param {Node | undefined} node
 * @returns {string | undefined}
 */
function stringConstant(node) {
  if (node === undefined) return undefined;
  if ('TypeCast' in node)
    return LITERAL_TYPES.includes(lastTypeName(node.TypeCast.typeName) ?? '') && !node.TypeCast.typeName?.arrayBounds
      ? stringConstant(node.TypeCast.arg)
      : undefined;
  if (!('A_Const' in node) || node.A_Const.isnull) return undefined;
  return node.A_Const.sval?.sval ?? (node.A_Const.sval !== undefined ? '' : undefined);
}

/**
 * The strings of a list of nodes when every one is a string constant.
 * @param {Node[] | undefined} nodes
 * @returns {string[] | undefined}
 */
function stringConstants(nodes) {
  if (nodes === undefined || nodes.length === 0) return undefined;
  /** @type {string[]} */
  const values = [];
  for (const n of nodes) {
    const v = stringConstant(n);
    if (v === undefined) return undefined;
    values.push(v);
  }
  return values;
}

/**
 * The elements of `ARRAY[…]`, possibly cast to a text array (`(ARRAY[…])::text[]`), when all are string constants.
 * @param {Node | undefined} node
 * @returns {string[] | undefined}
 */
function arrayOfStrings(node) {
  if (node === undefined) return undefined;
  if ('TypeCast' in node)
    return LITERAL_TYPES.includes(lastTypeName(node.TypeCast.typeName) ?? '') &&
      node.TypeCast.typeName?.arrayBounds?.length === 1
      ? arrayOfStrings(node.TypeCast.arg)
      : undefined;
  return 'A_ArrayExpr' in node ? stringConstants(node.A_ArrayExpr.elements) : undefined;
}

/**
 * The values other than NULL that `node` admits for `column`, when it limits the column to a list of literals and
 * names no other column; undefined otherwise.
 * @param {Node | undefined} node
 * @param {string} column
 * @returns {string[] | undefined}
 */
function admitted(node, column) {
  if (node === undefined) return undefined;
  if ('BoolExpr' in node) {
    if (node.BoolExpr.boolop !== 'OR_EXPR') return undefined;
    /** @type {string[]} */
    const values = [];
    for (const arg of node.BoolExpr.args ?? []) {
      const more = admitted(arg, column);
      if (more === undefined) return undefined;
      for (const v of more) if (!values.includes(v)) values.push(v);
    }
    return values;
  }
  if ('NullTest' in node)
    return node.NullTest.nulltesttype === 'IS_NULL' && isColumn(node.NullTest.arg, column) ? [] : undefined;
  if (!('A_Expr' in node)) return undefined;
  const { kind, name, lexpr, rexpr } = node.A_Expr;
  const op = name?.length === 1 && 'String' in name[0] ? name[0].String.sval : undefined;
  if (op !== '=') return undefined;
  if (kind === 'AEXPR_OP') {
    const [col, value] = isColumn(lexpr, column) ? [lexpr, rexpr] : [rexpr, lexpr];
    const v = isColumn(col, column) ? stringConstant(value) : undefined;
    return v === undefined ? undefined : [v];
  }
  if (kind === 'AEXPR_OP_ANY') return isColumn(lexpr, column) ? arrayOfStrings(rexpr) : undefined;
  if (kind === 'AEXPR_IN' && isColumn(lexpr, column) && rexpr !== undefined && 'List' in rexpr)
    return stringConstants(rexpr.List.items);
  return undefined;
}

/**
 * What one constraint's expression limits `column` to: the literals, or why it does not.
 * @param {string} expression a boolean expression as the database prints it
 * @param {string} column
 * @returns {Promise<{ values: string[] } | { reason: string }>}
 */
async function readListConstraint(expression, column) {
  /** @type {import('libpg-query').ParseResult} */
  let tree;
  try {
    tree = await parse(`SELECT ${expression}`);
  } catch (e) {
    return { reason: `cannot be parsed (${e instanceof Error ? e.message : String(e)})` };
  }
  const stmt = tree.stmts?.length === 1 ? tree.stmts[0].stmt : undefined;
  const targets = stmt !== undefined && 'SelectStmt' in stmt ? (stmt.SelectStmt.targetList ?? []) : [];
  const target = targets.length === 1 && 'ResTarget' in targets[0] ? targets[0].ResTarget.val : undefined;
  const values = admitted(target, column);
  return values === undefined || values.length === 0 ? { reason: 'is not a list of literals' } : { values };
}

/**
 * The unions of the literal-list constraints, and the constraints that are not one. A column with several list
 * constraints gets the literals all of them admit, in the first one's order.
 * @param {CheckOnColumn[]} checks every CHECK constraint on every text column it names
 * @returns {Promise<CheckUnions>}
 */
async function readCheckUnions(checks) {
  /** @type {Map<string, string[]>} */
  const unions = new Map();
  /** @type {UnreadCheck[]} */
  const notRead = [];
  for (const check of checks) {
    const key = `${check.table}.${check.column}`;
    const read = !check.validated
      ? { reason: 'is NOT VALID: rows from before it are unchecked' }
      : !LITERAL_TYPES.includes(check.type)
        ? { reason: `is on a ${check.type} column, whose values are not the literals as written` }
        : await readListConstraint(check.expression, check.column);
    if ('reason' in read) {
      notRead.push({ ...check, reason: read.reason });
      continue;
    }
    const before = unions.get(key);
    unions.set(key, before === undefined ? read.values : before.filter((v) => read.values.includes(v)));
  }
  const order = (/** @type {UnreadCheck} */ u) => `${u.table}\u0000${u.column}\u0000${u.constraint}`;
  const unread = notRead
    .filter((u) => !unions.has(`${u.table}.${u.column}`))
    .map(({ table, column, constraint, expression, reason }) => ({ table, column, constraint, expression, reason }))
    .sort((x, y) => (order(x) < order(y) ? -1 : order(x) > order(y) ? 1 : 0));
  return { unions, unread };
}

/**
 * A union of string literals as TypeScript (`never` for none).
 * @param {string[]} values
 */
const literalUnion = (values) => (values.length === 0 ? 'never' : values.map((v) => JSON.stringify(v)).join(' | '));

/**
 * The comment on a column one of whose CHECK constraints was not read as a list: one line, never closing the
 * comment it is in.
 * @param {UnreadCheck} u
 */
const unreadComment = (u) =>
  `CHECK ${u.constraint} ${u.reason}: ${u.expression}`.replace(/\*\//g, '*\\/').replace(/\r?\n|\r/g, '\\n');

module.exports = { literalUnion, readCheckUnions, readListConstraint, unreadComment };
