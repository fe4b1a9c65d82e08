/**
 * The console's usage chart: one SVG bar per day (cost), each with a tooltip, on axes — cost in units on the
 * left (0, half and the peak), the first, middle and last dates below — and a text summary as caption.
 */
import { money } from './dom.js';

export interface UsageDay {
  date: string;
  requests: number;
  cost_micros: number;
  cost: string;
}

const SVG = 'http://www.w3.org/2000/svg';
/** The drawing area inside the viewBox (320 × 130): room on the left for the cost labels, below for the dates. */
const PLOT = { left: 56, top: 6, width: 258, height: 100 };
const MICROS_PER_UNIT = 1_000_000;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A cost axis label: units with as few decimals as tell the ticks apart. */
function costLabel(micros: number, peakMicros: number): string {
  const decimals = peakMicros >= 100 * MICROS_PER_UNIT ? 0 : peakMicros >= MICROS_PER_UNIT ? 2 : 4;
  return (micros / MICROS_PER_UNIT).toFixed(decimals);
}

export function drawUsage(chart: SVGSVGElement, caption: HTMLElement, days: UsageDay[], totalCost: string): void {
  const peak = Math.max(1, ...days.map((d) => d.cost_micros));
  const slot = PLOT.width / Math.max(1, days.length);
  const bottom = PLOT.top + PLOT.height;
  const bars = days.map((day, index) => {
    // A day with any cost gets at least a sliver, so small usage is not invisible beside a large day.
    const height = day.cost_micros === 0 ? 0 : Math.max(1, (day.cost_micros / peak) * PLOT.height);
    const bar = svg('rect', {
      x: (PLOT.left + index * slot + slot * 0.1).toFixed(2),
      width: (slot * 0.8).toFixed(2),
      y: (bottom - height).toFixed(2),
      height: height.toFixed(2),
      class: 'bar',
    });
    bar.append(svg('title', {}, `${day.date}: ${money(day.cost)} (${day.requests} ${day.requests === 1 ? 'request' : 'requests'})`));
    return bar;
  });
  const axes: SVGElement[] = [
    svg('line', { x1: PLOT.left, x2: PLOT.left + PLOT.width, y1: bottom, y2: bottom, class: 'axis' }),
    svg('line', { x1: PLOT.left, x2: PLOT.left, y1: PLOT.top, y2: bottom, class: 'axis' }),
    svg('text', { x: 2, y: PLOT.top + 4, class: 'axis-label' }, 'units'),
  ];
  for (const share of [0, 0.5, 1]) {
    const y = bottom - share * PLOT.height;
    axes.push(svg('line', { x1: PLOT.left - 3, x2: PLOT.left, y1: y, y2: y, class: 'axis' }));
    axes.push(svg('text', { x: PLOT.left - 5, y: y + 3, 'text-anchor': 'end', class: 'axis-label tick-cost' }, costLabel(share * peak, peak)));
  }
  const dated = days.length ? [0, Math.floor((days.length - 1) / 2), days.length - 1] : [];
  for (const [n, index] of [...new Set(dated)].entries()) {
    const x = PLOT.left + (index + 0.5) * slot;
    const anchor = n === 0 ? 'start' : index === days.length - 1 ? 'end' : 'middle';
    axes.push(
      svg(
        'text',
        {
          x: anchor === 'start' ? PLOT.left : anchor === 'end' ? PLOT.left + PLOT.width : x,
          y: bottom + 14,
          'text-anchor': anchor,
          class: 'axis-label tick-date',
        },
        days[index]!.date.slice(5),
      ),
    );
  }
  chart.replaceChildren(...axes, ...bars);
  const active = days.filter((d) => d.requests > 0).length;
  const first = days[0]?.date ?? '';
  const last = days.at(-1)?.date ?? '';
  const requests = days.reduce((n, d) => n + d.requests, 0);
  caption.textContent = `${money(totalCost)} spent from ${first} to ${last}, on ${active} of ${days.length} days; ${requests} ${requests === 1 ? 'request' : 'requests'}.`;
}
