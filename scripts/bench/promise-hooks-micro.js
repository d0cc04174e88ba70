'use strict';
// Nanoseconds per promise operation with V8's promise hooks off or on (an AsyncLocalStorage run
// around the loops turns them on, as the log context did), best of 3 rounds:
//
//   node scripts/bench/promise-hooks-micro.js off; node scripts/bench/promise-hooks-micro.js on
const { AsyncLocalStorage } = require('node:async_hooks');
const on = process.argv[2] === 'on';
const N = 300000;
// The promise machinery is what is measured: an async function without await, and awaiting a plain value.
// eslint-disable-next-line @typescript-eslint/require-await
async function leaf(i) {
  return i;
}
async function mid(i) {
  return (await leaf(i)) + 1;
}
async function top(i) {
  return (await mid(i)) + 1;
}
const patterns = {
  'await resolved value': async () => {
    // eslint-disable-next-line @typescript-eslint/await-thenable -- awaiting a resolved value is the case measured
    for (let i = 0; i < N; i++) await i;
  },
  'async call chain of 3': async () => {
    for (let i = 0; i < N; i++) await top(i);
  },
  'new Promise + then': async () => {
    for (let i = 0; i < N; i++) await new Promise((r) => r(i)).then((x) => x + 1);
  },
  'Promise.all of 3': async () => {
    for (let i = 0; i < N / 3; i++) await Promise.all([leaf(i), leaf(i), leaf(i)]);
  },
};
async function main() {
  const out = {};
  for (let rep = 0; rep < 3; rep++)
    for (const [name, fn] of Object.entries(patterns)) {
      const t = process.hrtime.bigint();
      await fn();
      const ns = Number(process.hrtime.bigint() - t) / N;
      out[name] = Math.min(out[name] ?? Infinity, ns);
    }
  for (const [k, v] of Object.entries(out)) console.log(`${on ? 'on ' : 'off'}  ${v.toFixed(0).padStart(5)} ns  ${k}`);
}
if (on) void new AsyncLocalStorage().run({ userId: 'u' }, main);
else void main();
