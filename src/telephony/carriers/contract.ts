/**
 * What a carrier adapter is: the translation between one carrier's media-stream wire format and the call
 * session core's events. An adapter is pure (no sockets, no timers, no engines): it parses the frames the
 * carrier sends into `CarrierInbound` events and formats the core's outbound audio, marks and clears as the
 * frames that carrier expects. One file per carrier; adding a carrier is one file plus one line in the
 * registry (carriers/index.ts).
 */

/** Audio as it travels on the phone leg: G.711 μ-law or A-law at 8 kHz, or signed 16-bit little-endian PCM. */
export type CallCodec = 'pcmu' | 'pcma' | 'l16';

export interface CallAudioFormat {
  codec: CallCodec;
  /** 8000 for G.711; 8000 or 16000 for L16. */
  sampleRate: 8000 | 16000;
}

/** The start of a call's stream: who, which stream, the parameters the integrator attached, the audio format. */
export interface CallStart {
  /** The carrier's call id (Twilio CallSid, Telnyx call_control_id, Plivo callId, the AudioSocket UUID…). */
  callId: string;
  /** The stream id the carrier expects on every outbound frame (Twilio streamSid, Telnyx stream_id…); may equal callId. */
  streamId: string;
  from?: string;
  to?: string;
  direction?: string;
  /** The integrator's own parameters (TwiML `<Parameter>`, Telnyx custom parameters, Vonage headers…), as strings. */
  customParameters: Record<string, string>;
  /** Format of the caller's audio; outbound audio uses the same unless the adapter says otherwise. */
  format: CallAudioFormat;
}

export type CarrierInbound =
  /** The carrier's hello (Twilio `connected`); nothing to do but it is not an error. */
  | { type: 'connected' }
  | { type: 'start'; start: CallStart }
  /** Caller audio, raw codec bytes in the start's format (base64 already decoded). */
  | { type: 'media'; audio: Uint8Array }
  | { type: 'dtmf'; digit: string }
  /** The carrier has played our audio up to the mark of this name. */
  | { type: 'mark'; name: string }
  /** The stream (call) ended; `reason` when the carrier said why (AudioSocket error code, Exotel stop reason). */
  | { type: 'stop'; reason?: string }
  /**
   * A well-formed frame this adapter knows and ignores (e.g. a carrier's keep-alive, an outbound-track echo, an
   * acknowledgement of our clear); `detail` names it, and carries a carrier-reported error worth logging.
   */
  | { type: 'ignored'; detail?: string };

/** One frame to send to the carrier: a text frame (JSON) or a binary frame. */
export type CarrierFrame = { text: string } | { binary: Uint8Array };

/** A frame the carrier sent that is not its protocol (bad JSON, missing or mistyped fields, unknown binary). */
export class CarrierFrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CarrierFrameError';
  }
}

/**
 * One carrier's protocol, for one call. Adapters are stateful per call where the protocol needs it (a
 * sequence number on outbound frames, the stream id learned from `start`): `create()` returns a fresh one.
 */
export interface CarrierAdapter {
  /** twilio, telnyx, plivo, exotel, vonage, audiosocket. */
  readonly carrier: string;
  /** Parses one text frame into zero or more events; throws CarrierFrameError when it is not this protocol. */
  parseText(text: string): CarrierInbound[];
  /** Parses one binary frame (Vonage audio; AudioSocket TLV bytes, which may hold partial frames: the adapter buffers). */
  parseBinary(bytes: Uint8Array): CarrierInbound[];
  /** The format Kuma must send audio in, once the call has started. */
  outboundFormat(start: CallStart): CallAudioFormat;
  /**
   * Audio bytes per outbound frame: 20 ms of the outbound format (160 for G.711 8 kHz, 640 for L16 16 kHz),
   * except where the carrier documents another size (Exotel: 100 ms chunks). Pace by the bytes' duration
   * (bytes ÷ bytes per second of `outboundFormat`), not by an assumed 20 ms.
   */
  frameBytes(start: CallStart): number;
  /** One paced frame of outbound audio (exactly frameBytes, except possibly the last of a playback). */
  media(audio: Uint8Array): CarrierFrame;
  /** A playback marker the carrier will echo when the audio before it has played; null when the carrier has none. */
  mark(name: string): CarrierFrame | null;
  /** Drops the audio the carrier has buffered (barge-in); null when the carrier has no such command. */
  clear(): CarrierFrame | null;
  /** Frames to send when Kuma ends the call (AudioSocket hangup); usually none. */
  hangup(): CarrierFrame[];
}
