/**
 * Subtitle formats for transcripts with real timings: SubRip (`srt`, comma before milliseconds, cues
 * numbered from 1) and WebVTT (`vtt`, a `WEBVTT` header, dot before milliseconds). Cue text never contains
 * a blank line (it would end the cue), so internal line breaks are collapsed.
 */

export interface TimedText {
  start: number;
  end: number;
  text: string;
}

function clock(seconds: number, separator: ',' | '.'): string {
  const totalMs = Math.max(0, Math.round(seconds * 1000));
  const ms = totalMs % 1000;
  const s = Math.floor(totalMs / 1000) % 60;
  const m = Math.floor(totalMs / 60_000) % 60;
  const h = Math.floor(totalMs / 3_600_000);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms, 3)}`;
}

function cueText(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

export function toSrt(segments: TimedText[]): string {
  return segments
    .filter((s) => cueText(s.text) !== '')
    .map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(Math.max(s.end, s.start), ',')}\n${cueText(s.text)}\n`)
    .join('\n');
}

export function toVtt(segments: TimedText[]): string {
  const cues = segments
    .filter((s) => cueText(s.text) !== '')
    .map((s) => `${clock(s.start, '.')} --> ${clock(Math.max(s.end, s.start), '.')}\n${cueText(s.text)}\n`);
  return ['WEBVTT\n', ...cues].join('\n');
}
