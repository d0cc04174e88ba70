'use strict';
// The turn benchmark's pure part: figures → ratios to the floor → targets (met / NOT met) → one
// table. No I/O, so a unit test holds it (test/unit/bench-turn-report.spec.ts).

/** Median of a list of numbers (null when empty). */
function median(xs) {
  return quantile(xs, 0.5);
}

/** The q-quantile (nearest rank) of a list of numbers (null when empty). */
function quantile(xs, q) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))];
}

/** Bytes per parked turn that still count as "≈ 0": below what the worker's heap varies by anyway. */
const PARKED_BYTES_LIMIT = 4096;

/**
 * The targets of a turn benchmark: each reads the figures of Skald (`s`) and of the floor (`f`)
 * and answers `{ value, limit }` as text, and `met` (true / false, null when a phase was skipped).
 */
const TARGETS = [
  ratioTarget('ms per round, fresh conversation', 'msPerRoundFresh', 2),
  ratioTarget('CPU ms per round, all processes', 'cpuMsPerRound', 2.5),
  absTarget('SQL statements per round', (s) => s.sqlStatementsPerRound, '≤', 6),
  absTarget('SQL transactions per round', (s) => s.sqlTransactionsPerRound, '≤', 3),
  absTarget(
    'rounds of turns 181–200 vs 1–20 of one conversation',
    (s) => (s.msPerRoundLate == null || s.msPerRoundEarly == null ? null : s.msPerRoundLate / s.msPerRoundEarly),
    '≤',
    1.3,
    '×',
  ),
  absTarget('turns/s at 50 conversations, of ideal', (s) => fraction(s.turnsPerSec50, s.ideal50), '≥', 0.9, '', pct),
  absTarget('turns/s at 200 conversations, of ideal', (s) => fraction(s.turnsPerSec200, s.ideal200), '≥', 0.5, '', pct),
  {
    name: '1,000 concurrent conversations complete without an error',
    judge: (s) =>
      s.thousand == null
        ? { value: 'skipped', limit: '1000 of 1000, 0 errors', met: null }
        : {
            value: `${s.thousand.completed} of ${s.thousand.conversations}, ${s.thousand.errors} errors`,
            limit: `${s.thousand.conversations} of ${s.thousand.conversations}, 0 errors`,
            met: s.thousand.completed === s.thousand.conversations && s.thousand.errors === 0,
          },
  },
  absTarget('message to echo (median ms)', (s) => s.echoMs, '≤', 3, ' ms'),
  absTarget('event latency worker → client p99 (ms)', (s) => s.eventP99Ms, '≤', 25, ' ms'),
  absTarget('worker memory per parked turn (bytes)', (s) => s.parkedBytesPerTurn, '≤', PARKED_BYTES_LIMIT, ' B'),
];

function fraction(x, ideal) {
  return x == null || !ideal ? null : x / ideal;
}

function pct(x) {
  return `${(x * 100).toFixed(0)} %`;
}

function fmt(x, unit = '') {
  if (x == null) return '–';
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return `${x.toFixed(digits)}${unit}`;
}

function ratioTarget(name, key, max) {
  return {
    name: `${name} ≤ ${max}× the floor`,
    judge: (s, f) => {
      const r = s[key] == null || !f[key] ? null : s[key] / f[key];
      return r == null
        ? { value: 'skipped', limit: `${max}×`, met: null }
        : { value: `${fmt(r)}× (${fmt(s[key])} / ${fmt(f[key])})`, limit: `≤ ${max}×`, met: r <= max };
    },
  };
}

function absTarget(name, read, op, limit, unit = '', show = (x) => fmt(x, unit)) {
  return {
    name,
    judge: (s) => {
      const v = read(s);
      if (v == null) return { value: 'skipped', limit: `${op} ${show(limit)}`, met: null };
      return { value: show(v), limit: `${op} ${show(limit)}`, met: op === '≤' ? v <= limit : v >= limit };
    },
  };
}

/** Every target judged: `[{ name, value, limit, met }]`. */
function judge(skald, floor) {
  return TARGETS.map((t) => ({ name: t.name, ...t.judge(skald, floor) }));
}

/** The columns of the comparison table: a header and how a system's figures fill it. */
/** @type {Array<[string, (x: any) => string]>} */
const COLUMNS = [
  ['ms/round fresh (median)', (x) => fmt(x.msPerRoundFresh)],
  ['CPU ms/round, all processes', (x) => fmt(x.cpuMsPerRound)],
  [
    'SQL statements / transactions per round',
    (x) =>
      x.sqlStatementsPerRound == null ? '–' : `${fmt(x.sqlStatementsPerRound)} / ${fmt(x.sqlTransactionsPerRound)}`,
  ],
  [
    'ms/round turns 1–20 → last 20 of one conversation',
    (x) => (x.msPerRoundEarly == null ? '–' : `${fmt(x.msPerRoundEarly)} → ${fmt(x.msPerRoundLate)}`),
  ],
  ['turns/s at 50 (of ideal)', (x) => (x.turnsPerSec50 == null ? '–' : `${fmt(x.turnsPerSec50)} (${fmt(x.ideal50)})`)],
  [
    'turns/s at 200 (of ideal)',
    (x) => (x.turnsPerSec200 == null ? '–' : `${fmt(x.turnsPerSec200)} (${fmt(x.ideal200)})`),
  ],
  ['message → echo ms (median)', (x) => fmt(x.echoMs)],
  ['event p50 / p99 ms', (x) => (x.eventP50Ms == null ? '–' : `${fmt(x.eventP50Ms)} / ${fmt(x.eventP99Ms)}`)],
  ['B per parked turn', (x) => (x.parkedBytesPerTurn == null ? '–' : fmt(x.parkedBytesPerTurn))],
];

/**
 * The markdown table (floor row, Skald row, then any reference rows `[[name, figures]]`: the
 * topology floor, judged by no target), as printed and kept in docs.
 */
function renderTable(skald, floor, references = []) {
  const rows = [
    ['system', ...COLUMNS.map(([h]) => h)],
    ['hand-written durable loop (floor)', ...COLUMNS.map(([, f]) => f(floor))],
    ['Skald', ...COLUMNS.map(([, f]) => f(skald))],
    ...references.filter(([, x]) => x).map(([name, x]) => [`${name} (reference)`, ...COLUMNS.map(([, f]) => f(x))]),
  ];
  const line = (r) => `| ${r.join(' | ')} |`;
  return [line(rows[0]), line(rows[0].map(() => '---')), ...rows.slice(1).map(line)].join('\n');
}

function renderTargets(results) {
  return results
    .map(
      (r) => `${r.met === null ? 'skipped' : r.met ? 'met    ' : 'NOT met'}  ${r.name}: ${r.value} (target ${r.limit})`,
    )
    .join('\n');
}

/**
 * What the machine's cores allow at most in a throughput phase: a system that spent
 * `cpuMsPerTurn<n>` of CPU (all its processes and Postgres) on each turn it finished under that load
 * can finish no more than cores × 1000 / that many turns a second, whatever it does with its waits.
 * Against the ideal it shows whether a throughput target is reachable on this machine at all.
 */
function cpuCeiling(figures, n, cores) {
  const c = figures[`cpuMsPerTurn${n}`];
  return c == null || !(c > 0) ? null : (cores * 1000) / c;
}

/** Per system and load: turns/s measured, CPU a turn, how busy the cores were, and the ceiling. */
function renderCeilings(skald, floor, cores) {
  const line = (name, x, n) => {
    const t = cpuCeiling(x, n, cores);
    if (t == null) return `  ${name} at ${n}: –`;
    const ideal = x[`ideal${n}`];
    return (
      `  ${name} at ${n}: ${fmt(x[`turnsPerSec${n}`])} turns/s with ${fmt(x[`cpuMsPerTurn${n}`])} CPU ms a turn, ` +
      `the cores ${pct(x[`busy${n}`])} busy; at most ${fmt(t)} turns/s${ideal ? ` = ${pct(t / ideal)} of ideal` : ''}`
    );
  };
  return [
    `CPU ceiling on ${cores} cores (CPU of the system's processes and Postgres under each load; the benchmark's clients not counted):`,
    ...[50, 200].flatMap((n) => [line('floor', floor, n), line('Skald', skald, n)]),
  ].join('\n');
}

/**
 * What the topology floor (the architecture skeleton: ARCHITECTURE.md's processes and hops with
 * trivial handlers, measured in the same run) implies for each target it bears on: its own figure
 * against the target (a figure the skeleton already misses is out of reach of any implementation of
 * the topology on this machine), the budget the target leaves above it, and how much of Skald's
 * figure is above it (Skald's own code). Judges nothing: the targets stay Skald's against the floor.
 */
function renderTopologyFloor(skald, floor, skel) {
  const verdict = (ok) =>
    ok ? 'within reach of the topology' : 'NOT reachable under the fixed topology here (the skeleton alone misses it)';
  const lines = [
    'Topology floor (architecture skeleton: the fixed processes and hops, trivial handlers; a reference, judged by no target):',
  ];
  for (const [label, key, max] of /** @type {Array<[string, string, number]>} */ ([
    ['ms per round, fresh', 'msPerRoundFresh', 2],
    ['CPU ms per round', 'cpuMsPerRound', 2.5],
  ])) {
    const k = skel[key];
    const f = floor[key];
    const s = skald[key];
    if (k == null) {
      lines.push(`  ${label}: –`);
      continue;
    }
    const parts = [`skeleton ${fmt(k)}`];
    if (f) {
      parts.push(`= ${fmt(k / f)}× the floor (${fmt(f)})`);
      parts.push(`target ≤ ${max}× = ${fmt(max * f)}: ${verdict(k <= max * f)}, ${fmt(max * f - k)} left for code`);
    }
    if (s != null) parts.push(`Skald ${fmt(s)}: ${fmt(s - k)} above the skeleton (${fmt(s / k)}×)`);
    if (skel.skaldSize?.[key] != null) parts.push(`skeleton with a Skald-size request ${fmt(skel.skaldSize[key])}`);
    lines.push(`  ${label}: ${parts.join('; ')}`);
  }
  if (skel.echoMs != null) {
    const parts = [`skeleton median ${fmt(skel.echoMs)} ms, p99 ${fmt(skel.echoP99Ms)} ms`];
    parts.push(`target ≤ 3 ms: ${verdict(skel.echoMs <= 3)}`);
    if (skald.echoMs != null)
      parts.push(`Skald ${fmt(skald.echoMs)}: ${fmt(skald.echoMs - skel.echoMs)} ms above the skeleton`);
    lines.push(`  message → echo: ${parts.join('; ')}`);
  }
  if (skel.turnsPerSec50 != null) {
    const frac = fraction(skel.turnsPerSec50, skel.ideal50);
    lines.push(
      `  turns/s at 50: skeleton ${fmt(skel.turnsPerSec50)} = ${pct(frac)} of ideal, ${fmt(skel.cpuMsPerTurn50)} CPU ms a turn, ` +
        `the cores ${pct(skel.busy50)} busy; target ≥ 90 %: ${verdict(frac != null && frac >= 0.9)}`,
    );
  }
  if (skel.turnsPerSec200 != null) {
    const frac = fraction(skel.turnsPerSec200, skel.ideal200);
    lines.push(
      `  turns/s at 200: skeleton ${fmt(skel.turnsPerSec200)} = ${pct(frac)} of ideal, ${fmt(skel.cpuMsPerTurn200)} CPU ms a turn, ` +
        `the cores ${pct(skel.busy200)} busy; target ≥ 50 %: ${verdict(frac != null && frac >= 0.5)}`,
    );
  }
  if (skel.eventP99Ms != null)
    lines.push(
      `  event p50 / p99 at 50: skeleton ${fmt(skel.eventP50Ms)} / ${fmt(skel.eventP99Ms)} ms; target p99 ≤ 25 ms: ${verdict(skel.eventP99Ms <= 25)}`,
    );
  return lines.join('\n');
}

module.exports = {
  renderTopologyFloor,
  median,
  quantile,
  judge,
  renderTable,
  renderTargets,
  cpuCeiling,
  renderCeilings,
  TARGETS,
  PARKED_BYTES_LIMIT,
};
