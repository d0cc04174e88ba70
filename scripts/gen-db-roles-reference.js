#!/usr/bin/env node
// The "Database roles" table of docs/operations.md, generated from SERVICE_TABLE_GRANTS
// (libs/persistence/src/service-roles.ts), the map `cli.js roles` grants.
//
//   npx tsc -b libs/persistence && node scripts/gen-db-roles-reference.js    # rewrite the section
//   node scripts/gen-db-roles-reference.js --check                          # exit 1 when it is out of date
//
// The page is formatted with Prettier's API, so it stays `prettier --check` clean (test/docs/db-roles.spec.ts
// checks it is up to date).
'use strict';

const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { formatWithPrettier, replaceSection: replaceDocSection } = require('./lib-doc-section');
const { writeOrCheck } = require('./lib-generated');

const ROOT = join(__dirname, '..');
const OPERATIONS_MD = join(ROOT, 'docs', 'operations.md');
const BEGIN = '<!-- BEGIN GENERATED: database roles (scripts/gen-db-roles-reference.js) -->';
const END = '<!-- END GENERATED: database roles -->';

/**
 * A markdown table (Prettier pads its columns).
 * @param {string[]} header
 * @param {string[][]} rows
 */
function table(header, rows) {
  /** @param {string[]} cells */
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)];
}

/**
 * The markdown between the markers: the roles of the install `skald` (the database `skald`; other installs' roles
 * carry their own name instead, docs/operations.md "Sharing a cluster").
 * @param {{ SKALD_SERVICES: readonly string[], SERVICE_TABLE_GRANTS: Record<string, Record<string, readonly string[]>>, serviceRoleName(s: string, instance: string): string, servicePasswordEnv(s: string): string }} roles
 */
function renderRoles(roles) {
  const rows = [];
  for (const service of roles.SKALD_SERVICES) {
    for (const [tableName, privileges] of Object.entries(roles.SERVICE_TABLE_GRANTS[service])) {
      rows.push([
        `\`${roles.serviceRoleName(service, 'skald')}\``,
        service,
        `\`${roles.servicePasswordEnv(service)}\``,
        `\`${tableName}\``,
        privileges.join(', '),
      ]);
    }
  }
  return [
    BEGIN,
    '<!-- Do not edit by hand: `npx tsc -b libs/persistence && node scripts/gen-db-roles-reference.js`. -->',
    '',
    ...table(['Role', 'App', 'Password variable', 'Table', 'Privileges'], rows),
    '',
    END,
  ].join('\n');
}

/**
 * `markdown` with the generated section replaced by `section`, formatted by Prettier like the repo's files.
 * @param {string} markdown
 * @param {string} section
 */
function replaceSection(markdown, section) {
  return formatWithPrettier(replaceDocSection(markdown, BEGIN, END, section), OPERATIONS_MD);
}

module.exports = { OPERATIONS_MD, renderRoles, replaceSection };

if (require.main === module) {
  let roles;
  try {
    roles = require(join(ROOT, 'libs/persistence/dist/service-roles.js'));
  } catch (e) {
    console.error(
      `cannot load libs/persistence/dist/service-roles.js (${e.message}): run \`npx tsc -b libs/persistence\``,
    );
    process.exit(1);
  }
  const page = readFileSync(OPERATIONS_MD, 'utf8');
  writeOrCheck(OPERATIONS_MD, replaceSection(page, renderRoles(roles)), 'node scripts/gen-db-roles-reference.js');
}
