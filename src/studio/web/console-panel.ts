/**
 * The console: everything `npm run keys` does, over the admin API (/admin/v1) with an admin key — accounts,
 * balances, credit, keys (a new key is shown once, in the page only), revocation, 30 days of usage and the
 * models' readiness. The admin key follows the API key's rule: memory only unless the user asks to remember.
 */
import { busy, element, make, row, StatusLine } from './dom.js';
import { Client } from './http.js';
import { CredentialStore } from './credential-store.js';
import { drawUsage, type UsageDay } from './usage-chart.js';

interface Account { id: string; name: string; balance: string; available: string; active_keys: number; created_at: string }
interface Key { id: string; label: string; created_at: string; revoked_at: string | null }
interface Model { id: string; ready: boolean; detail?: string }

export function setUpConsole(): void {
  const credential = new CredentialStore('kuma.adminKey');
  const admin = new Client('/admin/v1', () => credential.current, 'Enter an admin key first (npm start prints one on first start; npm run keys -- admin create makes more).');
  const status = new StatusLine(element('admin-status'));
  const consoleStatus = new StatusLine(element('console-status'));
  const body = element<HTMLDivElement>('console-body');
  const keyInput = element<HTMLInputElement>('admin-key');
  const remember = element<HTMLInputElement>('remember-admin');
  const accountsBody = element<HTMLTableElement>('accounts').tBodies[0]!;
  const detail = element<HTMLElement>('account-detail');
  const keysBody = element<HTMLTableElement>('keys').tBodies[0]!;
  const newKey = element<HTMLDivElement>('new-key');
  const newKeyValue = element<HTMLOutputElement>('new-key-value');
  let selected: string | null = null;

  /** Runs an admin action, showing its failure in the console's status line. */
  const attempt = async (work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      consoleStatus.error(error);
    }
  };

  async function signIn(): Promise<void> {
    try {
      const me = await admin.json<{ id: string; label: string }>('/whoami');
      status.info(`Signed in with admin key ${me.id} (${me.label}).`);
      body.hidden = false;
      await Promise.all([loadAccounts(), loadReadiness()]);
    } catch (error) {
      body.hidden = true;
      status.error(error);
    }
  }

  async function loadAccounts(): Promise<void> {
    const { data } = await admin.json<{ data: Account[] }>('/accounts');
    accountsBody.replaceChildren(
      ...data.map((account) => {
        const open = make('button', 'Open', { type: 'button', 'aria-label': `Open account ${account.name}` });
        open.addEventListener('click', () => void attempt(() => openAccount(account.id)));
        return row([`${account.name} (${account.id})`, account.balance, account.available, String(account.active_keys)], open);
      }),
    );
  }

  async function openAccount(id: string): Promise<void> {
    const account = await admin.json<Account & { keys: Key[] }>(`/accounts/${encodeURIComponent(id)}`);
    selected = id;
    detail.hidden = false;
    element('account-heading').textContent = `Account ${account.name} (${account.id}): balance ${account.balance}`;
    keysBody.replaceChildren(
      ...account.keys.map((key) => {
        if (key.revoked_at) return row([key.id, key.label, key.created_at, `revoked ${key.revoked_at}`]);
        const revoke = make('button', 'Revoke', { type: 'button', 'aria-label': `Revoke key ${key.id}` });
        revoke.addEventListener('click', () => {
          if (!confirm(`Revoke key ${key.id} (${key.label})? Requests using it are refused at once.`)) return;
          void attempt(async () => {
            await admin.request(`/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE' });
            consoleStatus.info(`Key ${key.id} revoked.`);
            await Promise.all([openAccount(id), loadAccounts()]);
          });
        });
        return row([key.id, key.label, key.created_at, 'active'], revoke);
      }),
    );
    const usage = await admin.json<{ days: UsageDay[]; total_cost: string }>(`/accounts/${encodeURIComponent(id)}/usage?days=30`);
    drawUsage(element<HTMLElement>('usage-chart') as unknown as SVGSVGElement, element('usage-caption'), usage.days, usage.total_cost);
  }

  async function loadReadiness(): Promise<void> {
    const { data } = await admin.json<{ data: Model[] }>('/models');
    element('readiness').replaceChildren(
      ...data.map((model) => make('li', `${model.id}: ${model.ready ? 'ready' : `not ready${model.detail ? ` (${model.detail})` : ''}`}`, { class: model.ready ? 'ready' : 'not-ready' })),
    );
  }

  element<HTMLFormElement>('admin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    credential.use(keyInput.value, remember.checked);
    keyInput.value = '';
    void signIn();
  });
  element('forget-admin').addEventListener('click', () => {
    credential.forget();
    body.hidden = true;
    detail.hidden = true;
    newKey.hidden = true;
    newKeyValue.textContent = '';
    status.info('Admin key forgotten.');
  });

  const form = (id: string, handler: () => Promise<void>) => {
    const node = element<HTMLFormElement>(id);
    node.addEventListener('submit', (event) => {
      event.preventDefault();
      void busy(node.querySelector('button')!, () => attempt(handler));
    });
    return node;
  };
  const value = (id: string) => element<HTMLInputElement>(id).value.trim();

  form('new-account-form', async () => {
    const balance = value('new-account-balance');
    const account = await admin.send<Account>('/accounts', { name: value('new-account-name'), ...(balance ? { balance } : {}) });
    consoleStatus.info(`Account ${account.id} created with ${account.balance}.`);
    element<HTMLFormElement>('new-account-form').reset();
    await loadAccounts();
    await openAccount(account.id);
  });
  form('credit-form', async () => {
    if (!selected) return;
    const account = await admin.send<Account>(`/accounts/${encodeURIComponent(selected)}/credit`, { amount: value('credit-amount') });
    consoleStatus.info(`Balance of ${account.id} is now ${account.balance}.`);
    element<HTMLFormElement>('credit-form').reset();
    await Promise.all([openAccount(account.id), loadAccounts()]);
  });
  form('new-key-form', async () => {
    if (!selected) return;
    const label = value('new-key-label');
    const created = await admin.send<{ key: Key; api_key: string }>(`/accounts/${encodeURIComponent(selected)}/keys`, label ? { label } : {});
    newKeyValue.textContent = created.api_key;
    newKey.hidden = false;
    consoleStatus.info(`Key ${created.key.id} created.`);
    element<HTMLFormElement>('new-key-form').reset();
    await Promise.all([openAccount(selected), loadAccounts()]);
  });
  element('new-key-hide').addEventListener('click', () => {
    newKeyValue.textContent = '';
    newKey.hidden = true;
  });

  remember.checked = credential.remembered;
  if (credential.current) void signIn();
}
