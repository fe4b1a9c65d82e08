/** Text translation (POST /chat/completions with the vendor's language object), and its panel. */
import { busy, element, pageSetting, StatusLine } from './dom.js';
import type { Client } from './http.js';

const TRANSLATION_MODEL = 'banjugu-1';

/** The translation of `text`; the vendor object's name is the server's (`djelia` unless configured). */
export async function translateText(api: Client, text: string, source: string, target: string): Promise<string> {
  const completion = await api.send<{ choices: Array<{ message: { content: string | null } }> }>('/chat/completions', {
    model: TRANSLATION_MODEL,
    messages: [{ role: 'user', content: text }],
    [pageSetting('vendor')]: { source_language: source, target_language: target },
  });
  return completion.choices[0]?.message.content ?? '';
}

export function setUpTextPanel(api: Client): void {
  const form = element<HTMLFormElement>('text-form');
  const input = element<HTMLTextAreaElement>('text-input');
  const source = element<HTMLSelectElement>('text-source');
  const target = element<HTMLSelectElement>('text-target');
  const output = element<HTMLParagraphElement>('text-output');
  const status = new StatusLine(element('text-status'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void busy(form.querySelector('button')!, async () => {
      output.textContent = '';
      if (source.value === target.value) return status.error('Choose two different languages.');
      try {
        status.info('Translating…');
        output.textContent = await translateText(api, input.value, source.value, target.value);
        output.lang = target.value.slice(0, 2);
        status.clear();
      } catch (error) {
        status.error(error);
      }
    });
  });
}
