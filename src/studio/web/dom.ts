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
    this.node.replaceChildren(...withCode(error instanceof Error ? error.message : String(error)));
    this.node.classList.add('error');
  }

  clear(): void {
    this.info('');
  }
}

/**
 * A server message as nodes: its `backticked` names (model ids, fields) as <code>, the rest as text — so the
 * backticks do not show, and nothing from the network is ever parsed as HTML.
 */
export function withCode(message: string): Node[] {
  return message.split(/`([^`\n]+)`/).map((part, index) => (index % 2 === 1 ? make('code', part) : document.createTextNode(part)));
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

/**
 * Gives each body cell of `table` its column's name (`data-label`), shown before the value when a phone's
 * layout turns the rows into cards (styles.css `table.cards`); columns without a visible name get none.
 */
export function labelCells(table: HTMLTableElement): void {
  const names = [...(table.tHead?.rows[0]?.cells ?? [])].map((th) => (th.querySelector('.visually-hidden') ? '' : (th.textContent ?? '').trim()));
  for (const body of table.tBodies) {
    for (const tr of body.rows) {
      [...tr.cells].forEach((td, index) => {
        if (names[index] && !td.classList.contains('empty')) td.dataset.label = names[index]!;
      });
    }
  }
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

/**
 * An amount of credit as the page shows it: with its unit and always 6 decimals, the ledger's precision (a unit
 * is a million micros; a charge is often a fraction of a unit), so amounts line up and none is rounded away.
 * The server's strings keep every significant micro and so vary in length ("2.50", "0.0012").
 */
export function money(units: string): string {
  const value = Number(units);
  return Number.isFinite(value) ? `${value.toFixed(MONEY_DECIMALS)} units` : units;
}

const MONEY_DECIMALS = 6;

/** A "Copy" button for the text of `source` (a one-time secret), saying in `status` whether it was copied. */
export function copyButton(button: HTMLButtonElement, source: HTMLElement, status: HTMLElement): void {
  button.addEventListener('click', () => {
    const text = source.textContent ?? '';
    navigator.clipboard.writeText(text).then(
      () => (status.textContent = 'Copied to the clipboard.'),
      () => {
        // No clipboard access (an http:// page other than localhost): select it for Ctrl+C instead.
        getSelection()?.selectAllChildren(source);
        status.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
      },
    );
  });
}
