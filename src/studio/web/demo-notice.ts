/**
 * The demo-model notice: shown when the server serves Kuma's demo models (generated stand-ins that translate a
 * small glossary word by word), so that a translation that comes back half copied is not taken for a fault.
 * Its samples are sentences made only of glossary words; one click puts a sample in the translation and
 * speech forms.
 */
import { element, make, pageSetting } from './dom.js';

/** Bambara sentences every word of which the demo translator knows (models/generator/demo-nllb.ts, its glossary). */
export const DEMO_SAMPLES: ReadonlyArray<{ bam: string; fra: string; eng: string }> = [
  { bam: 'n dun malo sɔgɔma', fra: 'je manger riz matin', eng: 'I eat rice morning' },
  { bam: 'muso taa dugu', fra: 'femme aller village', eng: 'woman go village' },
  { bam: 'an ye wulu belebele', fra: 'nous voir chien grand', eng: 'we see dog big' },
];

export function setUpDemoNotice(): void {
  if (pageSetting('demo-models') !== 'true') return;
  element('demo-notice').hidden = false;
  element('demo-samples').replaceChildren(
    ...DEMO_SAMPLES.map((sample) => {
      const use = make('button', sample.bam, { type: 'button', lang: 'bm', 'aria-label': `Use the sample ${sample.bam}` });
      use.addEventListener('click', () => {
        element<HTMLTextAreaElement>('text-input').value = sample.bam;
        element<HTMLSelectElement>('text-source').value = 'bam_Latn';
        element<HTMLTextAreaElement>('speech-text').value = sample.bam;
      });
      const item = make('li');
      item.append(use, make('span', ` → ${sample.fra} (fr), ${sample.eng} (en)`, { class: 'hint' }));
      return item;
    }),
  );
}
