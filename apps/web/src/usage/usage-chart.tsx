import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { UsageDayRow } from '@skald/contracts';

const DAY_S = 86_400;

/** uPlot's series of a report's days: x in seconds (UTC midnight), tokens in and out, cost. */
function chartData(days: readonly UsageDayRow[]): uPlot.AlignedData {
  return [
    days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000),
    days.map((d) => d.input_tokens),
    days.map((d) => d.output_tokens),
    days.map((d) => d.cost_usd),
  ];
}

const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });

/**
 * Tokens (in, out) and cost per day, drawn by uPlot on a canvas (no inline style or script: it
 * sets styles through the DOM, which the page's CSP allows). The canvas is hidden from assistive
 * technology: the table next to it carries the same numbers.
 */
export function UsageChart({ days }: { days: readonly UsageDayRow[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(240, el.clientWidth);
    const css = getComputedStyle(el);
    const fg = css.getPropertyValue('--fg').trim() || '#1d1d1b';
    const accent = css.getPropertyValue('--accent').trim() || '#1f5fbf';
    const axis = { stroke: fg, grid: { stroke: 'rgba(128,128,128,0.25)' }, ticks: { stroke: 'rgba(128,128,128,0.4)' } };
    // On a phone the axes give their labels' room to the plot (the legend names the series).
    const narrow = el.clientWidth < 480;
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        scales: { x: { time: true }, usd: { auto: true } },
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        axes: [
          { ...axis, space: 60, incrs: [DAY_S, 7 * DAY_S, 30 * DAY_S] },
          {
            ...axis,
            label: narrow ? undefined : 'tokens',
            values: (_u, v) => v.map((n) => compact.format(n)),
            size: narrow ? 40 : 56,
          },
          {
            ...axis,
            scale: 'usd',
            side: 1,
            label: narrow ? undefined : 'USD',
            values: (_u, v) => v.map((n) => `$${n}`),
            grid: { show: false },
            size: narrow ? 40 : 56,
          },
        ],
        series: [
          { label: 'day', value: (_u, v) => (v === null ? '' : new Date(v * 1000).toISOString().slice(0, 10)) },
          { label: 'input tokens', stroke: accent, fill: 'rgba(31,95,191,0.15)', width: 2 },
          { label: 'output tokens', stroke: '#b4540a', width: 2 },
          { label: 'cost (USD)', stroke: '#2e7d32', scale: 'usd', width: 2, dash: [6, 4] },
        ],
      },
      chartData(days),
      el,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [days]);
  return <div ref={box} className="usage-chart" aria-hidden="true" />;
}
