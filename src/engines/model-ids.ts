/**
 * The ids of the three served models, one per capability. They are named here, on the engines' floor, because
 * every layer above asks for them by id: the catalog (api/model-catalog.ts), the routes' defaults, calls,
 * the demo and `bambara` packs, and `models:pull`.
 */

/** Bambara speech recognition (transcription). */
export const TRANSCRIPTION_MODEL_ID = 'sunjata-1';
/** Bambara text to speech. */
export const SPEECH_MODEL_ID = 'jifili-1';
/** Translation between Bambara, French and English. */
export const TRANSLATION_MODEL_ID = 'banjugu-1';
