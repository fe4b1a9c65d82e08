/**
 * The open account's settings in the console: rate-limit overrides of the account or one of its keys (empty
 * field = the configured default, 0 = unlimited), and the webhook its phone-call events are POSTed to, whose
 * new signing secret is shown once, like a new key.
 */
import { busy, copyButton, element } from './dom.js';
import type { Client } from './http.js';
import type { Key, Limits, LimitValues, Webhook } from './admin-types.js';

const FIELDS: Array<[keyof LimitValues, string]> = [
  ['requests_per_minute', 'limit-rpm'],
  ['tokens_per_minute', 'limit-tpm'],
  ['concurrent', 'limit-concurrent'],
];

const describe = (n: number) => (n === 0 ? 'unlimited' : String(n));

export class AccountSettings {
  private accountId: string | null = null;
  private readonly subject = element<HTMLSelectElement>('limits-subject');
  private readonly summary = element('limits-summary');
  private readonly webhookUrl = element<HTMLInputElement>('webhook-url');
  private readonly secretBox = element<HTMLDivElement>('webhook-secret');
  private readonly secretValue = element<HTMLOutputElement>('webhook-secret-value');

  constructor(
    private readonly admin: Client,
    /** Runs an action and shows its failure in the console's status line. */
    private readonly attempt: (work: () => Promise<void>) => Promise<void>,
    private readonly say: (text: string) => void,
  ) {
    const limitsForm = element<HTMLFormElement>('limits-form');
    limitsForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void busy(limitsForm.querySelector('button')!, () => this.attempt(() => this.saveLimits()));
    });
    element('limits-reset').addEventListener('click', () => void this.attempt(() => this.showLimits('DELETE')));
    this.subject.addEventListener('change', () => void this.attempt(() => this.showLimits()));
    const webhookForm = element<HTMLFormElement>('webhook-form');
    webhookForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void busy(webhookForm.querySelector('button')!, () => this.attempt(() => this.saveWebhook()));
    });
    element('webhook-clear').addEventListener('click', () => void this.attempt(() => this.clearWebhook()));
    element('webhook-secret-hide').addEventListener('click', () => this.hideSecret());
    copyButton(element<HTMLButtonElement>('webhook-secret-copy'), this.secretValue, element('webhook-secret-copied'));
  }

  /** Shows the settings of `accountId`, whose active keys can carry their own limits. */
  async open(accountId: string, accountName: string, keys: Key[]): Promise<void> {
    if (accountId !== this.accountId) this.hideSecret();
    this.accountId = accountId;
    const previous = this.subject.value;
    const options = [[accountId, `Account ${accountName} (all its keys)`], ...keys.filter((k) => !k.revoked_at).map((k) => [k.id, `Key ${k.id} (${k.label})`])];
    this.subject.replaceChildren(...options.map(([value, label]) => new Option(label, value)));
    if (options.some(([value]) => value === previous)) this.subject.value = previous;
    const webhook = await this.admin.json<Webhook>(`/accounts/${encodeURIComponent(accountId)}/webhook`);
    this.webhookUrl.value = webhook.url ?? '';
    await this.showLimits();
  }

  private async showLimits(method: 'GET' | 'DELETE' = 'GET'): Promise<void> {
    const limits = await this.admin.json<Limits>(`/limits/${encodeURIComponent(this.subject.value)}`, { method });
    for (const [field, id] of FIELDS) {
      const input = element<HTMLInputElement>(id);
      input.value = limits.overrides[field] === null ? '' : String(limits.overrides[field]);
      input.placeholder = `default: ${describe(limits.effective[field])}`;
    }
    const effective = `${describe(limits.effective.requests_per_minute)} requests/min, ${describe(limits.effective.tokens_per_minute)} tokens/min, ${describe(limits.effective.concurrent)} at once`;
    this.summary.textContent = `In force: ${effective}.${limits.enforced === false ? ' Rate limits are off on this server (KUMA_RATE_LIMITS).' : ''}`;
    if (method === 'DELETE') this.say(`Limits of ${limits.subject} are back to the defaults.`);
  }

  private async saveLimits(): Promise<void> {
    const changes: Partial<LimitValues> = {};
    for (const [field, id] of FIELDS) {
      const text = element<HTMLInputElement>(id).value.trim();
      if (text !== '' && !/^\d+$/.test(text)) throw new Error('A limit is a whole number (0 = unlimited), or empty for the default.');
      changes[field] = text === '' ? null : Number(text);
    }
    const limits = await this.admin.send<Limits>(`/limits/${encodeURIComponent(this.subject.value)}`, changes, 'PATCH');
    this.say(`Limits of ${limits.subject} saved.`);
    await this.showLimits();
  }

  private async saveWebhook(): Promise<void> {
    const keep = element<HTMLInputElement>('webhook-keep-secret').checked;
    const saved = await this.admin.send<Webhook>(
      `/accounts/${encodeURIComponent(this.accountId!)}/webhook`,
      { url: this.webhookUrl.value.trim(), keep_secret: keep },
      'PUT',
    );
    if (saved.secret) {
      this.secretValue.textContent = saved.secret;
      this.secretBox.hidden = false;
    }
    this.say(`Call events of ${saved.account_id} now go to ${saved.url}.`);
  }

  private async clearWebhook(): Promise<void> {
    await this.admin.request(`/accounts/${encodeURIComponent(this.accountId!)}/webhook`, { method: 'DELETE' });
    this.webhookUrl.value = '';
    this.hideSecret();
    this.say('Webhook removed: call events are no longer sent.');
  }

  private hideSecret(): void {
    this.secretValue.textContent = '';
    element('webhook-secret-copied').textContent = '';
    this.secretBox.hidden = true;
  }
}
