/** Small DOM helpers shared by the panels: typed lookups, status lines and element building. */

export function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

/** A value the page was built with (`<meta name="kuma-…" content="…">`). */
export function pageSetting(name: string): string {
  const meta = document.querySelector<HTMLMetaElement>(`meta[name="kuma-${name}"]`);
  if (!meta) throw new Error(`the page has no kuma-${name} setting`);
  return meta.content;
}

/** A role="status" line: polite for progress, marked (and announced) as an error when it is one. */
export class StatusLine {
  constructor(private readonly node: HTMLElement) {}

  info(text: string): void {
    this.node.textContent = text;
    this.node.classList.remove('error');
  }

  error(error: unknown): void {
    this.node.textContent = error instanceof Error ? error.message : String(error);
    this.node.classList.add('error');
  }

  clear(): void {
    this.info('');
  }
}

/** `<tag>` with text content and attributes (never innerHTML: every value shown comes from the network). */
export function make<K extends keyof HTMLElementTagNameMap>(tag: K, text = '', attributes: Record<string, string> = {}): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** A table row of text cells, with `extra` nodes (buttons) in a last cell when given. */
export function row(cells: string[], ...extra: Node[]): HTMLTableRowElement {
  const tr = make('tr');
  for (const cell of cells) tr.append(make('td', cell));
  if (extra.length) {
    const td = make('td');
    td.append(...extra);
    tr.append(td);
  }
  return tr;
}

/** Seconds → `m:ss.s`, for turn and segment times. */
export function clock(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  return `${minutes}:${(seconds - minutes * 60).toFixed(1).padStart(4, '0')}`;
}

/** Runs `work` with `button` disabled, so a double click cannot send a request twice. */
export async function busy<T>(button: HTMLButtonElement, work: () => Promise<T>): Promise<T> {
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
  }
}
