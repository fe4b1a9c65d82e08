/** The console's usage chart: one SVG bar per day (cost), each with a tooltip, and a text summary as caption. */

export interface UsageDay {
  date: string;
  requests: number;
  cost_micros: number;
  cost: string;
}

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 300;
const HEIGHT = 100;

export function drawUsage(svg: SVGSVGElement, caption: HTMLElement, days: UsageDay[], totalCost: string): void {
  const peak = Math.max(1, ...days.map((d) => d.cost_micros));
  const slot = WIDTH / Math.max(1, days.length);
  const bars = days.map((day, index) => {
    // A day with any cost gets at least a sliver, so small usage is not invisible beside a large day.
    const height = day.cost_micros === 0 ? 0 : Math.max(1, (day.cost_micros / peak) * (HEIGHT - 2));
    const bar = document.createElementNS(SVG, 'rect');
    bar.setAttribute('x', (index * slot + slot * 0.1).toFixed(2));
    bar.setAttribute('width', (slot * 0.8).toFixed(2));
    bar.setAttribute('y', (HEIGHT - height).toFixed(2));
    bar.setAttribute('height', height.toFixed(2));
    bar.setAttribute('class', 'bar');
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `${day.date}: ${day.cost} (${day.requests} ${day.requests === 1 ? 'request' : 'requests'})`;
    bar.append(title);
    return bar;
  });
  const baseline = document.createElementNS(SVG, 'line');
  for (const [name, value] of Object.entries({ x1: '0', x2: String(WIDTH), y1: String(HEIGHT - 0.5), y2: String(HEIGHT - 0.5), class: 'axis' })) baseline.setAttribute(name, value);
  svg.replaceChildren(baseline, ...bars);
  const active = days.filter((d) => d.requests > 0).length;
  const first = days[0]?.date ?? '';
  const last = days.at(-1)?.date ?? '';
  const requests = days.reduce((n, d) => n + d.requests, 0);
  caption.textContent = `${totalCost} spent from ${first} to ${last}, on ${active} of ${days.length} days; ${requests} ${requests === 1 ? 'request' : 'requests'}.`;
}
