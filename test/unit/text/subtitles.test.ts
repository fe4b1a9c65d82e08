import { describe, expect, it } from 'vitest';
import { toSrt, toVtt } from '../../../src/text/subtitles.js';

const segments = [
  { start: 0.5, end: 2.04, text: 'i ni ce' },
  { start: 3661.0015, end: 3662.9996, text: ' a ka kɛnɛ\n\nwa ' },
];

describe('subtitles', () => {
  it('writes SubRip cues numbered from 1 with comma milliseconds and hours past 60 minutes', () => {
    expect(toSrt(segments)).toBe('1\n00:00:00,500 --> 00:00:02,040\ni ni ce\n\n2\n01:01:01,002 --> 01:01:03,000\na ka kɛnɛ wa\n');
  });

  it('writes WebVTT with its header and dot milliseconds', () => {
    expect(toVtt(segments)).toBe('WEBVTT\n\n00:00:00.500 --> 00:00:02.040\ni ni ce\n\n01:01:01.002 --> 01:01:03.000\na ka kɛnɛ wa\n');
  });

  it('skips empty cues and renumbers', () => {
    expect(
      toSrt([
        { start: 0, end: 1, text: ' ' },
        { start: 1, end: 2, text: 'n' },
      ]),
    ).toBe('1\n00:00:01,000 --> 00:00:02,000\nn\n');
    expect(toVtt([])).toBe('WEBVTT\n');
  });
});
