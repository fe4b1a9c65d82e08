/**
 * Text to speech: POST /audio/speech, played as it streams (speech-player.ts). When playback started and
 * when the response ended are shown, and kept on the <audio> element's data attributes for the browser test.
 */
import { busy, element, pageSetting, StatusLine } from './dom.js';
import type { Client } from './http.js';
import { chunksOf, PlaybackTimes, playMp3, playPcm, playWhole } from './speech-player.js';

/**
 * Moussa is jifili-1's voice; Sekou and Seydou are voices of the multi-speaker legacy model only, which answers
 * 404 from its retirement date on. The page offers a voice only while the server lists its model.
 */
const VOICES: Array<{ value: string; label: string; model: () => string }> = [
  { value: 'moussa', label: 'Moussa', model: () => 'jifili-1' },
  { value: 'sekou', label: 'Sekou', model: () => `${pageSetting('vendor')}-tts-v2` },
  { value: 'seydou', label: 'Seydou', model: () => `${pageSetting('vendor')}-tts-v2` },
];

const modelOf = (voice: string) => (VOICES.find((v) => v.value === voice) ?? VOICES[0]!).model();

/** Offers the voices whose model is among `served` (the server's model list); Moussa until the list is known. */
export function offerVoices(served: readonly string[]): void {
  const select = element<HTMLSelectElement>('speech-voice');
  const previous = select.value;
  const offered = VOICES.filter((voice) => served.includes(voice.model()));
  select.replaceChildren(...(offered.length ? offered : VOICES.slice(0, 1)).map((voice) => new Option(voice.label, voice.value)));
  if (offered.some((voice) => voice.value === previous)) select.value = previous;
}

const TYPES: Record<string, string> = { wav: 'audio/wav', opus: 'audio/ogg', mp3: 'audio/mpeg' };

export function setUpSpeechPanel(api: Client): void {
  const form = element<HTMLFormElement>('speech-form');
  const text = element<HTMLTextAreaElement>('speech-text');
  const voice = element<HTMLSelectElement>('speech-voice');
  const format = element<HTMLSelectElement>('speech-format');
  const audio = element<HTMLAudioElement>('speech-audio');
  const status = new StatusLine(element('speech-status'));

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void busy(form.querySelector('button')!, async () => {
      const chosen = format.value;
      const streamed = chosen === 'pcm' || (chosen === 'mp3' && 'MediaSource' in window && MediaSource.isTypeSupported('audio/mpeg'));
      delete audio.dataset.playingMs;
      delete audio.dataset.responseEndMs;
      try {
        audio.pause();
        status.info('Synthesizing…');
        const times = new PlaybackTimes(performance.now(), (t) => {
          if (t.playingMs !== null) audio.dataset.playingMs = t.playingMs.toFixed(1);
          if (t.responseEndMs !== null) audio.dataset.responseEndMs = t.responseEndMs.toFixed(1);
          showTimes(t, streamed);
        });
        const response = await api.request('/audio/speech', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: modelOf(voice.value), input: text.value, voice: voice.value, response_format: chosen }),
        });
        const chunks = chunksOf(response);
        if (chosen === 'pcm') await playPcm(chunks, times);
        else if (streamed) await playMp3(audio, chunks, times);
        else await playWhole(audio, chunks, TYPES[chosen] ?? 'application/octet-stream', times);
      } catch (error) {
        status.error(error);
      }
    });
  });

  function showTimes(times: PlaybackTimes, streamed: boolean): void {
    const parts: string[] = [];
    if (times.playingMs !== null) parts.push(`sound after ${Math.round(times.playingMs)} ms`);
    if (times.responseEndMs !== null) parts.push(`response complete after ${Math.round(times.responseEndMs)} ms`);
    status.info(`${parts.join('; ')}${streamed ? '' : ' (this format plays once complete)'}.`);
  }
}
