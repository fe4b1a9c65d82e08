/**
 * File transcription: the upload goes to POST /audio/transcriptions as `verbose_json` (text and segments with
 * times); the subtitle downloads are the same file transcribed as `srt` and `vtt` by the server (its own
 * formats, not a re-rendering here), fetched when the user asks for them.
 */
import { busy, clock, element, row, StatusLine } from './dom.js';
import type { Client } from './http.js';

const SPEECH_MODEL = 'sunjata-1';

interface Verbose {
  text: string;
  duration?: number;
  segments?: Array<{ start: number; end: number; text: string }>;
}

export function setUpFilePanel(api: Client): void {
  const form = element<HTMLFormElement>('file-form');
  const input = element<HTMLInputElement>('file-input');
  const status = new StatusLine(element('file-status'));
  const text = element<HTMLParagraphElement>('file-text');
  const table = element<HTMLTableElement>('file-segments');
  const links = { srt: element<HTMLAnchorElement>('download-srt'), vtt: element<HTMLAnchorElement>('download-vtt') };
  let file: File | null = null;

  /** Downloads belong to one transcription: a new file or a new run drops the fetched ones. */
  const resetLinks = () => {
    for (const link of Object.values(links)) {
      if (link.href) URL.revokeObjectURL(link.href);
      link.removeAttribute('href');
      link.hidden = true;
    }
  };

  const transcribe = (upload: File, format: string) => {
    const body = new FormData();
    body.append('file', upload);
    body.append('model', SPEECH_MODEL);
    body.append('response_format', format);
    return api.request('/audio/transcriptions', { method: 'POST', body });
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    file = input.files?.[0] ?? null;
    if (!file) return status.error('Choose an audio file first.');
    const upload = file;
    void busy(form.querySelector('button')!, async () => {
      text.textContent = '';
      table.hidden = true;
      resetLinks();
      try {
        status.info(`Transcribing ${upload.name}…`);
        const result = (await (await transcribe(upload, 'verbose_json')).json()) as Verbose;
        text.textContent = result.text;
        const body = table.tBodies[0]!;
        body.replaceChildren(...(result.segments ?? []).map((s) => row([clock(s.start), clock(s.end), s.text.trim()])));
        table.hidden = body.rows.length === 0;
        for (const link of Object.values(links)) link.hidden = false;
        status.info(`${result.segments?.length ?? 0} segments${result.duration ? `, ${result.duration.toFixed(1)} s of audio` : ''}.`);
      } catch (error) {
        status.error(error);
      }
    });
  });

  // A download is a second (billed) transcription in that format, so it runs only on the user's click.
  for (const [format, link] of Object.entries(links)) {
    link.addEventListener('click', (event) => {
      if (link.href) return; // already fetched: the browser downloads the blob
      event.preventDefault();
      if (!file) return;
      const upload = file;
      void (async () => {
        try {
          status.info(`Preparing the .${format} file…`);
          const blob = await (await transcribe(upload, format)).blob();
          link.href = URL.createObjectURL(new Blob([blob], { type: format === 'vtt' ? 'text/vtt' : 'application/x-subrip' }));
          link.download = `${upload.name.replace(/\.[^.]*$/, '')}.${format}`;
          status.clear();
          link.click();
        } catch (error) {
          status.error(error);
        }
      })();
    });
  }
  input.addEventListener('change', resetLinks);
}
