/**
 * File transcription: the upload goes to POST /audio/transcriptions as `verbose_json` (text and segments with
 * times). The subtitle downloads are made here from those segments, with the server's own SubRip and WebVTT
 * writers (src/text/subtitles.ts, bundled into the page): asking the server for `srt` and `vtt` would be a
 * second and a third billed transcription of the same file.
 */
import { busy, clock, element, row, StatusLine } from './dom.js';
import type { Client } from './http.js';
import { toSrt, toVtt } from '../../text/subtitles.js';

const SPEECH_MODEL = 'sunjata-1';

interface Verbose {
  text: string;
  duration?: number;
  segments?: Array<{ start: number; end: number; text: string }>;
}

const SUBTITLES = {
  srt: { write: toSrt, type: 'application/x-subrip' },
  vtt: { write: toVtt, type: 'text/vtt' },
};

export function setUpFilePanel(api: Client): void {
  const form = element<HTMLFormElement>('file-form');
  const input = element<HTMLInputElement>('file-input');
  const status = new StatusLine(element('file-status'));
  const text = element<HTMLParagraphElement>('file-text');
  const table = element<HTMLTableElement>('file-segments');
  const note = element('download-note');
  const links = { srt: element<HTMLAnchorElement>('download-srt'), vtt: element<HTMLAnchorElement>('download-vtt') };

  /** Downloads belong to one transcription: a new file or a new run drops them. */
  const resetLinks = () => {
    for (const link of Object.values(links)) {
      if (link.href) URL.revokeObjectURL(link.href);
      link.removeAttribute('href');
      link.hidden = true;
    }
    note.hidden = true;
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const upload = input.files?.[0] ?? null;
    if (!upload) return status.error('Choose an audio file first.');
    void busy(form.querySelector('button')!, async () => {
      text.textContent = '';
      table.hidden = true;
      resetLinks();
      try {
        status.info(`Transcribing ${upload.name}…`);
        const body = new FormData();
        body.append('file', upload);
        body.append('model', SPEECH_MODEL);
        body.append('response_format', 'verbose_json');
        const result = (await (await api.request('/audio/transcriptions', { method: 'POST', body })).json()) as Verbose;
        const segments = result.segments ?? [];
        text.textContent = result.text;
        table.tBodies[0]!.replaceChildren(...segments.map((s) => row([clock(s.start), clock(s.end), s.text.trim()])));
        table.hidden = segments.length === 0;
        const base = upload.name.replace(/\.[^.]*$/, '') || 'transcript';
        for (const [format, link] of Object.entries(links) as Array<[keyof typeof SUBTITLES, HTMLAnchorElement]>) {
          const { write, type } = SUBTITLES[format];
          link.href = URL.createObjectURL(new Blob([write(segments)], { type }));
          link.download = `${base}.${format}`;
          link.hidden = segments.length === 0;
        }
        note.hidden = segments.length === 0;
        status.info(`${segments.length} segments${result.duration ? `, ${result.duration.toFixed(1)} s of audio` : ''}.`);
      } catch (error) {
        status.error(error);
      }
    });
  });
  input.addEventListener('change', resetLinks);
}
