/**
 * Kuma Studio, in the browser: the API key and the model list. The key lives in this page's memory; it is
 * written to localStorage only when the user ticks "Remember on this device", and it is sent only in the
 * Authorization header of requests to this origin (never in a URL).
 */

const REMEMBERED_KEY = 'kuma.apiKey';
const API = '/openai/v1';

let apiKey: string | null = localStorage.getItem(REMEMBERED_KEY);

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

const keyInput = element<HTMLInputElement>('api-key');
const rememberBox = element<HTMLInputElement>('remember-key');
const keyStatus = element<HTMLParagraphElement>('key-status');
const modelList = element<HTMLUListElement>('models');

/** An error envelope's message, or the status line when the body is not one. */
async function errorMessage(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    // not JSON: fall through to the status
  }
  const retry = response.headers.get('retry-after');
  return `HTTP ${response.status}${retry ? ` (retry in ${retry} s)` : ''}`;
}

async function api(path: string, init: RequestInit = {}): Promise<Response> {
  if (!apiKey) throw new Error('Enter an API key first.');
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${apiKey}`);
  const response = await fetch(`${API}${path}`, { ...init, headers });
  if (!response.ok) throw new Error(await errorMessage(response));
  return response;
}

function showStatus(text: string, isError = false): void {
  keyStatus.textContent = text;
  keyStatus.classList.toggle('error', isError);
}

async function loadModels(): Promise<void> {
  modelList.replaceChildren();
  try {
    const { data } = (await (await api('/models')).json()) as { data: Array<{ id: string; owned_by?: string }> };
    for (const model of data) {
      const item = document.createElement('li');
      item.textContent = model.id;
      modelList.append(item);
    }
    showStatus(`Key accepted: ${data.length} models.`);
  } catch (error) {
    showStatus((error as Error).message, true);
  }
}

element<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  apiKey = keyInput.value.trim() || null;
  keyInput.value = '';
  if (apiKey && rememberBox.checked) localStorage.setItem(REMEMBERED_KEY, apiKey);
  else localStorage.removeItem(REMEMBERED_KEY);
  void loadModels();
});

element<HTMLButtonElement>('forget-key').addEventListener('click', () => {
  apiKey = null;
  localStorage.removeItem(REMEMBERED_KEY);
  modelList.replaceChildren();
  showStatus('Key forgotten.');
});

rememberBox.checked = apiKey !== null;
if (apiKey) void loadModels();
else showStatus('No key yet: paste one (npm start prints a dev key).');
