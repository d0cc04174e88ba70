#!/usr/bin/env node
'use strict';
// `npm run build`: the TypeScript projects (`tsc -b tsconfig.build.json`) with a line for each project it compiles
// ("compiling libs/contracts (2 of 12)"), then the web client (scripts/build-web.js). tsc's own messages (errors)
// are printed as tsc prints them; its --verbose bookkeeping is not.
const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');
const { forEachLine } = require('./lib-services');

const ROOT = path.resolve(__dirname, '..');
/** tsc --verbose's bookkeeping lines (`<time> - Project '…' is up to date …`), shown as progress or not at all. */
const BOOKKEEPING =
  / - (Projects in this build:|Project '|Building project '|Updating output timestamps|Updating unchanged output|Skipping build)/;

function compile() {
  return new Promise((resolve) => {
    const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
    const child = spawn(process.execPath, [tsc, '-b', 'tsconfig.build.json', '--verbose'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    /** @type {string[]} */
    const projects = [];
    let compiled = 0;
    forEachLine(child.stdout, (line) => {
      // tsc --verbose ends some lines with \r\n.
      const l = line.replace(/\r$/, '');
      const listed = /^\s+\* (.+)$/.exec(l);
      if (listed) {
        // The solution file itself compiles nothing.
        if (path.dirname(listed[1]) !== '.') projects.push(path.dirname(listed[1]));
        return;
      }
      const building = / - Building project '(.+)'\.\.\.$/.exec(l);
      if (building) {
        const project = path.relative(ROOT, path.dirname(building[1])) || '.';
        compiled++;
        const at = projects.indexOf(project);
        console.log(`compiling ${project}${at >= 0 ? ` (${at + 1} of ${projects.length})` : ''}`);
        return;
      }
      if (l.trim() === '' || BOOKKEEPING.test(l)) return;
      console.log(l);
    });
    child.on('exit', (code, signal) => {
      if (code === 0 && compiled === 0) console.log('TypeScript projects up to date');
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

/**
 * The workspace packages' `bin` files are tsc output (mode 0644): made executable, so the links npm made
 * at install time (`npx skald`) run them.
 */
function markBinsExecutable() {
  const { chmodSync, existsSync, readFileSync, readdirSync } = require('node:fs');
  for (const dir of ['apps', 'libs'])
    for (const name of readdirSync(path.join(ROOT, dir))) {
      const manifest = path.join(ROOT, dir, name, 'package.json');
      if (!existsSync(manifest)) continue;
      /** @type {{ bin?: string | Record<string, string> }} */
      const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
      const bins = typeof pkg.bin === 'string' ? [pkg.bin] : Object.values(pkg.bin ?? {});
      for (const bin of bins) {
        const file = path.join(ROOT, dir, name, bin);
        if (existsSync(file)) chmodSync(file, 0o755);
      }
    }
}

async function main() {
  const code = await compile();
  if (code !== 0) process.exit(code);
  markBinsExecutable();
  const web = spawnSync(process.execPath, [path.join(__dirname, 'build-web.js')], { cwd: ROOT, stdio: 'inherit' });
  process.exit(web.status ?? 1);
}

void main();
