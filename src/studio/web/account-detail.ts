/**
 * One account in the console: its balance and credit, its keys (create — the key is shown once, in the page
 * only — and revoke), 30 days of usage as a chart, its latest charges and phone calls, and its settings.
 */
import { busy, copyButton, element, labelCells, make, money, row } from './dom.js';
import type { Client } from './http.js';
import type { Account, Call, Key, UsageRecord } from './admin-types.js';
import { AccountSettings } from './account-settings.js';
import { drawUsage, type UsageDay } from './usage-chart.js';

const LATEST_ROWS = 20;

/** A table's rows, or one row saying there are none. */
function fill(tableId: string, rows: HTMLTableRowElement[], none: string): void {
  const table = element<HTMLTableElement>(tableId);
  if (rows.length === 0) {
    const cell = make('td', none, { colspan: String(table.tHead!.rows[0]!.cells.length), class: 'empty' });
    const empty = make('tr');
    empty.append(cell);
    rows = [empty];
  }
  table.tBodies[0]!.replaceChildren(...rows);
  labelCells(table);
}

export class AccountDetail {
  private selected: string | null = null;
  private readonly section = element<HTMLElement>('account-detail');
  private readonly keysBody = element<HTMLTableElement>('keys').tBodies[0]!;
  private readonly newKey = element<HTMLDivElement>('new-key');
  private readonly newKeyValue = element<HTMLOutputElement>('new-key-value');
  private readonly settings: AccountSettings;

  constructor(
    private readonly admin: Client,
    private readonly attempt: (work: () => Promise<void>) => Promise<void>,
    private readonly say: (text: string) => void,
    /** The accounts list, refreshed after a change to balances or keys. */
    private readonly accountsChanged: () => Promise<void>,
  ) {
    this.settings = new AccountSettings(admin, attempt, say);
    this.form('credit-form', async () => {
      const account = await this.admin.send<Account>(`${this.path()}/credit`, { amount: element<HTMLInputElement>('credit-amount').value.trim() });
      this.say(`Balance of ${account.id} is now ${money(account.balance)}.`);
      await Promise.all([this.open(account.id), this.accountsChanged()]);
    });
    this.form('new-key-form', async () => {
      const label = element<HTMLInputElement>('new-key-label').value.trim();
      const created = await this.admin.send<{ key: Key; api_key: string }>(`${this.path()}/keys`, label ? { label } : {});
      this.newKeyValue.textContent = created.api_key;
      this.newKey.hidden = false;
      this.say(`Key ${created.key.id} created.`);
      await Promise.all([this.open(this.selected!), this.accountsChanged()]);
    });
    element('new-key-hide').addEventListener('click', () => this.hideNewKey());
    copyButton(element<HTMLButtonElement>('new-key-copy'), this.newKeyValue, element('new-key-copied'));
  }

  /** Loads and shows the account; the form fields of the previous one are cleared. */
  async open(id: string): Promise<void> {
    if (id !== this.selected) this.hideNewKey();
    this.selected = id;
    const account = await this.admin.json<Account & { keys: Key[] }>(this.path());
    this.section.hidden = false;
    element('account-heading').textContent = `Account ${account.name} (${account.id}): balance ${money(account.balance)}`;
    this.keysBody.replaceChildren(...account.keys.map((key) => this.keyRow(key)));
    labelCells(element<HTMLTableElement>('keys'));
    const [usage, records, calls] = await Promise.all([
      this.admin.json<{ days: UsageDay[]; total_cost: string }>(`${this.path()}/usage?days=30`),
      this.admin.json<{ data: UsageRecord[] }>(`${this.path()}/usage/records?limit=${LATEST_ROWS}`),
      this.admin.json<{ data: Call[] }>(`${this.path()}/calls?limit=${LATEST_ROWS}`),
      this.settings.open(account.id, account.name, account.keys),
    ]);
    drawUsage(document.getElementById('usage-chart') as unknown as SVGSVGElement, element('usage-caption'), usage.days, usage.total_cost);
    fill(
      'usage-records',
      records.data.map((r) => row([r.created_at, r.model, `${r.quantity} ${r.unit}${r.quantity === 1 ? '' : 's'}`, money(r.cost), r.key_id])),
      'No charges yet.',
    );
    fill(
      'calls',
      calls.data.map((c) =>
        row([c.started_at, `${c.carrier} (${c.mode})`, `${(c.duration_ms / 1000).toFixed(1)} s`, String(c.turns), money(c.cost), c.end_reason]),
      ),
      'No phone calls yet.',
    );
  }

  close(): void {
    this.section.hidden = true;
    this.selected = null;
    this.hideNewKey();
  }

  private path(): string {
    return `/accounts/${encodeURIComponent(this.selected!)}`;
  }

  private keyRow(key: Key): HTMLTableRowElement {
    if (key.revoked_at) return row([key.id, key.label, key.created_at, `revoked ${key.revoked_at}`]);
    const revoke = make('button', 'Revoke', { type: 'button', 'aria-label': `Revoke key ${key.id}` });
    revoke.addEventListener('click', () => {
      if (!confirm(`Revoke key ${key.id} (${key.label})? Requests using it are refused at once.`)) return;
      void this.attempt(async () => {
        await this.admin.request(`/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE' });
        this.say(`Key ${key.id} revoked.`);
        await Promise.all([this.open(this.selected!), this.accountsChanged()]);
      });
    });
    return row([key.id, key.label, key.created_at, 'active'], revoke);
  }

  private form(id: string, handler: () => Promise<void>): void {
    const node = element<HTMLFormElement>(id);
    node.addEventListener('submit', (event) => {
      event.preventDefault();
      void busy(node.querySelector('button')!, () =>
        this.attempt(async () => {
          await handler();
          node.reset();
        }),
      );
    });
  }

  private hideNewKey(): void {
    this.newKeyValue.textContent = '';
    element('new-key-copied').textContent = '';
    this.newKey.hidden = true;
  }
}
