#!/usr/bin/env node
'use strict';
// CPU per "Current date and time" line of the environment message (agent-loop formatZonedDateTime),
// A/B in one process: the formatter that asks Intl.formatToParts for every date (as before) and
// the one that asks it once per zone and UTC minute. Calls as a turn makes them: one per round, a
// few milliseconds apart, in a handful of zones; blocks alternate.
//
//   npm run build && node scripts/bench/zoned-time.js [--calls 200000]
const path = require('node:path');
const { formatZonedDateTime } = require(path.resolve(__dirname, '../../libs/agent-loop/dist/datetime.js'));

const argv = process.argv.slice(2);
const i = argv.indexOf('--calls');
const CALLS = i >= 0 ? Number(argv[i + 1]) : 200_000;
const BLOCK = 5000;
const fmt = new Map();
function perDate(date, timeZone) {
  let f = fmt.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    fmt.set(timeZone, f);
  }
  const parts = {};
  for (const p of f.formatToParts(date)) parts[p.type] = p.value;
  const y = Number(parts.year),
    mo = Number(parts.month),
    d = Number(parts.day);
  const h = Number(parts.hour),
    mi = Number(parts.minute),
    s = Number(parts.second);
  const off = Math.round((Date.UTC(y, mo - 1, d, h, mi, s) - Math.floor(date.getTime() / 1000) * 1000) / 60000);
  const pad = (n) => String(n).padStart(2, '0');
  const a = Math.abs(off);
  return `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${off < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)} (${timeZone})`;
}
const ZONES = ['Europe/Rome', 'America/New_York', 'Asia/Kolkata', 'UTC'];
let clock = Date.UTC(2026, 11, 3, 7, 0, 0);
const variants = { 'Intl per date': perDate, 'Intl per minute': formatZonedDateTime };
const us = { 'Intl per date': 0, 'Intl per minute': 0 };
let sink = 0;
for (let done = -BLOCK * 4; done < CALLS; done += BLOCK)
  for (const [name, f] of Object.entries(variants)) {
    const t = process.cpuUsage();
    for (let k = 0; k < BLOCK; k++) {
      clock += 7; // a round every few ms
      const out = f(new Date(clock), ZONES[k & 3]);
      sink += out.length;
    }
    const d = process.cpuUsage(t);
    if (done >= 0) us[name] += d.user + d.system;
  }
console.log(`one environment date line, ${CALLS} calls each (${sink > 0 ? 'ok' : ''}):`);
for (const [name, total] of Object.entries(us))
  console.log(`  ${name.padEnd(16)} ${((total / CALLS) * 1000).toFixed(0)} ns CPU`);
