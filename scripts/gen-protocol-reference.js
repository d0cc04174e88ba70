#!/usr/bin/env node
// The wire reference of docs/protocol.md: every WS frame and event and every REST route, generated from the
// schemas the gateway validates with and the route table (libs/contracts: ROUTES, which the gateway's
// controllers bind to and the OpenAPI document is made from).
//
//   npm run build && node scripts/gen-protocol-reference.js     # rewrite the section in docs/protocol.md
//   node scripts/gen-protocol-reference.js --check              # exit 1 when the section is out of date
//
// test/docs/protocol.spec.ts renders the same section from the sources and compares it with the page.
'use strict';

const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { formatWithPrettier, replaceSection } = require('./lib-doc-section');
const { writeOrCheck } = require('./lib-generated');

const ROOT = join(__dirname, '..');
const PROTOCOL_MD = join(ROOT, 'docs', 'protocol.md');
const BEGIN = '<!-- BEGIN GENERATED: wire reference (scripts/gen-protocol-reference.js) -->';
const END = '<!-- END GENERATED: wire reference -->';

/**
 * What the reference reads of the contracts (zod 4 schemas and the gateway's route table).
 * @typedef {{ shape: Record<string, { safeParse(value: unknown): { success: boolean } }> }} ObjectSchema
 * @typedef {ObjectSchema & { shape: { type: { value: string } } }} FrameSchema  an object schema with a literal `type`
 * @typedef {{ options: FrameSchema[] }} UnionSchema
 * @typedef {{ method: string, path: string, auth: string, summary: string }} Route  an entry of ROUTES
 * @typedef {{
 *   clientFrames: UnionSchema,
 *   sessionEvents: Record<string, ObjectSchema | undefined>,
 *   ephemeralEvents: UnionSchema,
 *   userEvents: UnionSchema,
 *   connectionEvents: readonly string[],
 *   routes: Readonly<Record<string, Route>>,
 * }} WireContracts
 */

/**
 * The field list of a zod object: `name` when required, `name?` when it may be left out; `type` first.
 * @param {ObjectSchema | undefined} schema
 */
function fields(schema) {
  const shape = schema && schema.shape;
  if (!shape) return '';
  return Object.keys(shape)
    .filter((k) => k !== 'type')
    .map((k) => (shape[k].safeParse(undefined).success ? `\`${k}?\`` : `\`${k}\``))
    .join(', ');
}

/**
 * The object schemas of a discriminated union (zod 4 keeps them in `options`).
 * @param {UnionSchema} union
 */
function options(union) {
  return union.options;
}

/**
 * The markdown section. `c` holds: clientFrames (a discriminated union), sessionEvents (type → body schema),
 * ephemeralEvents and userEvents (unions), connectionEvents (type names), routes (ROUTES, by operationId).
 * @param {WireContracts} c
 */
function renderReference(c) {
  const out = [BEGIN, ''];
  const table = (/** @type {string} */ title, /** @type {string[]} */ head, /** @type {string[][]} */ rows) => {
    out.push(`### ${title}`, '', `| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`);
    for (const r of rows) out.push(`| ${r.join(' | ')} |`);
    out.push('');
  };
  table(
    'Client → server frames',
    ['`type`', 'fields'],
    options(c.clientFrames).map((o) => [`\`${o.shape.type.value}\``, fields(o)]),
  );
  table(
    'Session events (stored, with `session_id` and a contiguous `seq`)',
    ['`type`', 'fields'],
    Object.entries(c.sessionEvents).map(([t, body]) => [`\`${t}\``, fields(body)]),
  );
  table(
    'Ephemeral events (never stored, never replayed)',
    ['`type`', 'fields'],
    options(c.ephemeralEvents).map((o) => [`\`${o.shape.type.value}\``, fields(o)]),
  );
  table(
    'User events (every socket of the user, whatever the source)',
    ['`type`', 'fields'],
    options(c.userEvents).map((o) => [`\`${o.shape.type.value}\``, fields(o)]),
  );
  out.push(
    '### Connection events (one socket)',
    '',
    c.connectionEvents.map((t) => `\`${t}\``).join(', ') + ' — fields in the table of PROTOCOL.md.',
    '',
  );
  table(
    'REST routes (`ROUTES` in libs/contracts; the OpenAPI document at `GET /api/docs`, shown at `/docs`, is made from it)',
    ['method', 'path', 'operationId', 'who', 'what'],
    Object.entries(c.routes).map(([id, r]) => [
      r.method.toUpperCase(),
      `\`${r.path}\``,
      `\`${id}\``,
      r.auth,
      r.summary.replace(/\|/g, '\\|').replace(/\s+/g, ' '),
    ]),
  );
  out.push(END);
  return out.join('\n');
}

/** @returns {WireContracts} */
function loadBuilt() {
  const contracts = require(join(ROOT, 'libs/contracts/dist/index.js'));
  return {
    clientFrames: contracts.ClientFrame,
    sessionEvents: contracts.SessionEventBodies,
    ephemeralEvents: contracts.EphemeralEventSchema,
    userEvents: contracts.UserEventSchema,
    connectionEvents: contracts.CONNECTION_EVENT_TYPES,
    routes: contracts.ROUTES,
  };
}

/**
 * docs/protocol.md as it should be: `markdown` with a fresh section, formatted by Prettier like the repo's files.
 * @param {string} markdown
 * @param {string} section
 */
function expectedDocument(markdown, section) {
  return formatWithPrettier(replaceSection(markdown, BEGIN, END, section), PROTOCOL_MD);
}

if (require.main === module) {
  const page = readFileSync(PROTOCOL_MD, 'utf8');
  writeOrCheck(
    PROTOCOL_MD,
    expectedDocument(page, renderReference(loadBuilt())),
    'node scripts/gen-protocol-reference.js',
  );
}

module.exports = { PROTOCOL_MD, renderReference, expectedDocument };
