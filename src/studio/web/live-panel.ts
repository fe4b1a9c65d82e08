/**
 * Live transcription: the reference browser client of Kuma's realtime channel. The API key never reaches the
 * socket: the page mints a short-lived, single-use client secret (POST /realtime/client_secrets) and opens
 * the WebSocket with it as a subprotocol entry, as OpenAI's browser clients do. Interim text is shown as the
 * deltas arrive; each completed turn is listed with its times, then translated (POST /chat/completions).
 */
import { CLOSE_CODES, CLOSE_REASONS } from '../../duplex/close-codes.js';
import { clock, element, make, StatusLine } from './dom.js';
import type { Client } from './http.js';
import { MicCapture, toBase64 } from './mic-capture.js';
import { translateText } from './text-panel.js';

const SPEECH_MODEL = 'sunjata-1';

interface RealtimeEvent {
  type: string;
  item_id?: string;
  delta?: string;
  transcript?: string;
  audio_start_ms?: number;
  audio_end_ms?: number;
  error?: { message?: string; code?: string };
  /** session.interims (a Kuma event): interim text paused because the server is busy, or resumed. */
  paused?: boolean;
}

interface Turn {
  startMs: number | null;
  endMs: number | null;
  interim: string;
}

export function setUpLivePanel(api: Client): void {
  const startButton = element<HTMLButtonElement>('live-start');
  const stopButton = element<HTMLButtonElement>('live-stop');
  const targetSelect = element<HTMLSelectElement>('live-translate');
  const status = new StatusLine(element('live-status'));
  const interimLine = element<HTMLParagraphElement>('live-interim');
  const turnList = element<HTMLOListElement>('live-turns');
  const pausedNote = element('live-interims-paused');
  let session: { socket: WebSocket; mic: MicCapture | null } | null = null;

  const stop = (message = 'Stopped.') => {
    if (!session) return;
    session.mic?.stop();
    if (session.socket.readyState <= WebSocket.OPEN) session.socket.close(CLOSE_CODES.normal, CLOSE_REASONS.done);
    session = null;
    pausedNote.hidden = true;
    startButton.disabled = false;
    stopButton.disabled = true;
    status.info(message);
  };

  startButton.addEventListener('click', () => {
    // Disabled until the session stops (not just while it opens): one microphone session at a time.
    startButton.disabled = true;
    void (async () => {
      try {
        status.info('Opening a session…');
        const secret = await api.send<{ value: string }>('/realtime/client_secrets', {
          expires_after: { anchor: 'created_at', seconds: 60 },
          session: {
            type: 'transcription',
            audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: SPEECH_MODEL }, turn_detection: { type: 'server_vad' } } },
          },
        });
        const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/openai/v1/realtime?intent=transcription`;
        const socket = new WebSocket(url, ['realtime', `openai-insecure-api-key.${secret.value}`]);
        const pending: string[] = [];
        const current: { socket: WebSocket; mic: MicCapture | null } = { socket, mic: null };
        session = current;
        const turns = new Map<string, Turn>();
        socket.onopen = () => {
          for (const message of pending.splice(0)) socket.send(message);
          status.info('Listening: speak now.');
        };
        socket.onmessage = (message) => onEvent(JSON.parse(String(message.data)) as RealtimeEvent, turns);
        socket.onclose = (event) => {
          if (session === current) stop(event.code === CLOSE_CODES.normal ? 'Session ended.' : `The session closed: ${event.reason || `code ${event.code}`}.`);
        };
        current.mic = await MicCapture.start((frame) => {
          const append = JSON.stringify({ type: 'input_audio_buffer.append', audio: toBase64(frame) });
          if (socket.readyState === WebSocket.OPEN) socket.send(append);
          else if (socket.readyState === WebSocket.CONNECTING && pending.length < 500) pending.push(append);
        });
        if (session !== current)
          current.mic.stop(); // closed while the microphone was opening
        else stopButton.disabled = false;
      } catch (error) {
        stop();
        startButton.disabled = false;
        status.error(error);
      }
    })();
  });
  stopButton.addEventListener('click', () => stop());

  function onEvent(event: RealtimeEvent, turns: Map<string, Turn>): void {
    const id = event.item_id ?? '';
    const turn = (): Turn => {
      let found = turns.get(id);
      if (!found) turns.set(id, (found = { startMs: null, endMs: null, interim: '' }));
      return found;
    };
    switch (event.type) {
      case 'input_audio_buffer.speech_started':
        turn().startMs = event.audio_start_ms ?? null;
        break;
      case 'input_audio_buffer.speech_stopped':
        turn().endMs = event.audio_end_ms ?? null;
        break;
      case 'conversation.item.input_audio_transcription.delta':
        turn().interim += event.delta ?? '';
        interimLine.textContent = turn().interim;
        break;
      case 'conversation.item.input_audio_transcription.completed':
        interimLine.textContent = '';
        addTurn(turn(), event.transcript ?? '');
        turns.delete(id);
        break;
      case 'conversation.item.input_audio_transcription.failed':
        status.error(`A turn could not be transcribed: ${event.error?.message ?? 'unknown error'}`);
        break;
      case 'session.interims':
        // The server is too busy for interim text (each turn's final still comes): say so rather than look stuck.
        pausedNote.hidden = event.paused !== true;
        break;
      case 'error':
        status.error(event.error?.message ?? 'The session reported an error.');
        break;
    }
  }

  function addTurn(turn: Turn, transcript: string): void {
    const item = make('li');
    const times = turn.startMs !== null && turn.endMs !== null ? `${clock(turn.startMs / 1000)}–${clock(turn.endMs / 1000)}` : '';
    item.append(make('span', times, { class: 'time' }), make('span', transcript, { class: 'transcript' }));
    turnList.append(item);
    const target = targetSelect.value;
    if (!target || !transcript.trim()) return;
    const translation = make('span', '…', { class: 'translation', lang: target.slice(0, 2) });
    item.append(translation);
    translateText(api, transcript, 'bam_Latn', target).then(
      (text) => (translation.textContent = text),
      (error: Error) => {
        translation.textContent = `(not translated: ${error.message})`;
        translation.classList.add('error');
      },
    );
  }
}
