/**
 * The console: everything `npm run keys` does, over the admin API (/admin/v1) with an admin key — accounts
 * and their balances here, one account's keys, credit, usage, calls and settings in account-detail.ts, and
 * the models' readiness. The admin key follows the API key's rule: memory only unless the user asks to
 * remember it.
 */
import { busy, element, labelCells, make, money, row, StatusLine } from './dom.js';
import { Client } from './http.js';
import { CredentialStore } from './credential-store.js';
import type { Account, Model } from './admin-types.js';
import { AccountDetail } from './account-detail.js';

export function setUpConsole(): void {
  const credential = new CredentialStore('kuma.adminKey');
  const admin = new Client(
    '/admin/v1',
    () => credential.current,
    'Enter an admin key first (npm start prints one on first start; npm run keys -- admin create makes more).',
  );
  const status = new StatusLine(element('admin-status'));
  const consoleStatus = new StatusLine(element('console-status'));
  const body = element<HTMLDivElement>('console-body');
  const keyInput = element<HTMLInputElement>('admin-key');
  const remember = element<HTMLInputElement>('remember-admin');
  const accountsBody = element<HTMLTableElement>('accounts').tBodies[0]!;

  /** Runs an admin action, showing its failure in the console's status line. */
  const attempt = async (work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      consoleStatus.error(error);
    }
  };
  const detail = new AccountDetail(
    admin,
    attempt,
    (text) => consoleStatus.info(text),
    () => loadAccounts(),
  );

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
        open.addEventListener('click', () => void attempt(() => detail.open(account.id)));
        return row([`${account.name} (${account.id})`, money(account.balance), money(account.available), String(account.active_keys)], open);
      }),
    );
    labelCells(element<HTMLTableElement>('accounts'));
  }

  async function loadReadiness(): Promise<void> {
    const { data } = await admin.json<{ data: Model[] }>('/models');
    element('readiness').replaceChildren(
      ...data.map((model) =>
        make('li', `${model.id}: ${model.ready ? 'ready' : `not ready${model.detail ? ` (${model.detail})` : ''}`}`, {
          class: model.ready ? 'ready' : 'not-ready',
        }),
      ),
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
    detail.close();
    status.info('Admin key forgotten.');
  });

  const newAccount = element<HTMLFormElement>('new-account-form');
  newAccount.addEventListener('submit', (event) => {
    event.preventDefault();
    void busy(newAccount.querySelector('button')!, () =>
      attempt(async () => {
        const balance = element<HTMLInputElement>('new-account-balance').value.trim();
        const name = element<HTMLInputElement>('new-account-name').value.trim();
        const account = await admin.send<Account>('/accounts', { name, ...(balance ? { balance } : {}) });
        consoleStatus.info(`Account ${account.id} created with ${money(account.balance)}.`);
        newAccount.reset();
        await loadAccounts();
        await detail.open(account.id);
      }),
    );
  });

  remember.checked = credential.remembered;
  if (credential.current) void signIn();
}
