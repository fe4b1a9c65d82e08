/**
 * Kuma Studio in the browser. "Try it" uses an API key: it lives in this page's memory and is written to
 * localStorage only when the user ticks "Remember on this device"; it is sent only in the Authorization
 * header of requests to this origin — never in a URL, and never on the realtime socket, which opens with a
 * short-lived client secret minted for it. "Console" does the same with an admin key.
 */
import { element, make, StatusLine } from './dom.js';
import { Client } from './http.js';
import { CredentialStore } from './credential-store.js';
import { setUpLivePanel } from './live-panel.js';
import { setUpFilePanel } from './file-panel.js';
import { offerVoices, setUpSpeechPanel } from './speech-panel.js';
import { setUpDemoNotice } from './demo-notice.js';
import { setUpTextPanel } from './text-panel.js';
import { setUpConsole } from './console-panel.js';

const apiKey = new CredentialStore('kuma.apiKey');
const api = new Client('/openai/v1', () => apiKey.current, 'Enter an API key first (npm start prints a dev key on first start).');

function setUpKeyPanel(): void {
  const keyInput = element<HTMLInputElement>('api-key');
  const remember = element<HTMLInputElement>('remember-key');
  const status = new StatusLine(element('key-status'));
  const models = element<HTMLUListElement>('models');

  const check = async () => {
    models.replaceChildren();
    try {
      const { data } = await api.json<{ data: Array<{ id: string }> }>('/models');
      models.append(...data.map((model) => make('li', model.id)));
      offerVoices(data.map((model) => model.id));
      status.info(`Key accepted: ${data.length} models.`);
    } catch (error) {
      status.error(error);
    }
  };

  element<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    apiKey.use(keyInput.value, remember.checked);
    keyInput.value = '';
    void check();
  });
  element('forget-key').addEventListener('click', () => {
    apiKey.forget();
    models.replaceChildren();
    status.info('Key forgotten.');
  });
  remember.checked = apiKey.remembered;
  if (apiKey.current) void check();
  else status.info('No key yet: paste one (npm start prints a dev key on first start).');
}

/**
 * Two views behind toggle buttons; the choice is the URL's fragment (#console), never a key: typed into the
 * address bar, or reached with back and forward, it switches the view too.
 */
function setUpViews(): void {
  const views = { try: element('view-try'), console: element('view-console') };
  const tabs = { try: element<HTMLButtonElement>('tab-try'), console: element<HTMLButtonElement>('tab-console') };
  const show = (name: keyof typeof views) => {
    for (const key of Object.keys(views) as Array<keyof typeof views>) {
      views[key].hidden = key !== name;
      tabs[key].setAttribute('aria-pressed', String(key === name));
    }
  };
  const fromUrl = () => show(location.hash === '#console' ? 'console' : 'try');
  tabs.try.addEventListener('click', () => {
    if (location.hash) history.pushState(null, '', location.pathname + location.search);
    show('try');
  });
  tabs.console.addEventListener('click', () => {
    if (location.hash !== '#console') history.pushState(null, '', '#console');
    show('console');
  });
  // hashchange: a fragment typed into the address bar; popstate: back and forward over the entries above.
  window.addEventListener('hashchange', fromUrl);
  window.addEventListener('popstate', fromUrl);
  fromUrl();
}

/**
 * A new action starts with a clean slate: the error lines left by earlier ones (in any panel) are cleared as
 * a form is submitted or a button pressed, so that what is shown in red is about what was just done.
 */
function clearOldErrors(): void {
  const clear = () => {
    for (const line of document.querySelectorAll<HTMLElement>('[role="status"].error')) {
      line.textContent = '';
      line.classList.remove('error');
    }
  };
  document.addEventListener('submit', clear, true);
  document.addEventListener(
    'click',
    (event) => {
      if ((event.target as Element | null)?.closest('button')) clear();
    },
    true,
  );
}

clearOldErrors();
setUpViews();
setUpDemoNotice();
setUpKeyPanel();
setUpLivePanel(api);
setUpFilePanel(api);
setUpSpeechPanel(api);
setUpTextPanel(api);
setUpConsole();
