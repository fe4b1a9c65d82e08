/**
 * The import rules of src/ (`npm run check:imports`, run by `npm test`): the floors of docs/ARCHITECTURE.md,
 * lowest first. A module may import its own floor and the floors below it, never one above; no import cycle
 * may exist at run time (a cycle through `import type` only is erased by the compiler and allowed); only the
 * transport opens uWebSockets.js and only src/engines/onnx opens onnxruntime.
 *
 * A folder (or a top-level file) not on any floor fails the check: place it on a floor here and in
 * docs/ARCHITECTURE.md.
 */

/** Lowest first. Entries are folders of src/, or files of src/ itself when they end in `.ts`. */
const FLOORS = [
  { name: 'ground', rooms: ['primitives', 'duplex', 'text', 'threads', 'observability', 'outbound'] },
  { name: 'settings', rooms: ['config', 'store'] },
  { name: 'services', rooms: ['billing', 'limits', 'auth', 'engines', 'codecs', 'models-hub'] },
  // The hearing core and the speaking core.
  { name: 'cores', rooms: ['realtime', 'voice'] },
  { name: 'telephony', rooms: ['telephony'] },
  { name: 'api', rooms: ['api'] },
  { name: 'doors', rooms: ['transport', 'studio'] },
  { name: 'top', rooms: ['server.ts', 'main.ts', 'telephony-wiring.ts', 'cluster', 'cli'] },
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** `^src/(a|b)/` for folders, `^src/x\.ts$` for files. */
function roomsPattern(rooms) {
  const alternatives = rooms.map((room) => (room.endsWith('.ts') ? `${escape(room)}$` : `${escape(room)}/`));
  return `^src/(${alternatives.join('|')})`;
}

const upwardRules = FLOORS.slice(0, -1).map((floor, index) => {
  const above = FLOORS.slice(index + 1);
  return {
    name: `floor-${floor.name}-imports-upward`,
    severity: 'error',
    comment:
      `src/{${floor.rooms.join(',')}} is on the '${floor.name}' floor: it may import only its own floor and those below ` +
      `(docs/ARCHITECTURE.md). Move the import's target down, or pass what it needs in from above.`,
    from: { path: roomsPattern(floor.rooms) },
    to: { path: roomsPattern(above.flatMap((f) => f.rooms)) },
  };
});

const everyRoom = roomsPattern(FLOORS.flatMap((f) => f.rooms));

module.exports = {
  forbidden: [
    ...upwardRules,
    {
      name: 'no-runtime-cycle',
      severity: 'error',
      comment:
        'These modules import each other at run time (a cycle of value imports): the one loaded first sees the ' +
        "other's exports undefined. Break the cycle, or make the edge that only needs types an `import type`.",
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'module-on-no-floor',
      severity: 'error',
      comment: 'Every folder of src/ stands on a floor: add this one to FLOORS in .dependency-cruiser.cjs and to docs/ARCHITECTURE.md.',
      from: { path: '^src/', pathNot: everyRoom },
      to: {},
    },
    {
      name: 'imports-module-on-no-floor',
      severity: 'error',
      comment: 'Every folder of src/ stands on a floor: add this one to FLOORS in .dependency-cruiser.cjs and to docs/ARCHITECTURE.md.',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: everyRoom },
    },
    {
      name: 'uws-outside-transport',
      severity: 'error',
      comment: 'Only src/transport talks to uWebSockets.js: the rest of the server speaks the API and duplex contracts.',
      from: { path: '^src/', pathNot: '^src/transport/' },
      to: { path: 'node_modules/uWebSockets\\.js/' },
    },
    {
      name: 'onnxruntime-outside-engines-onnx',
      severity: 'error',
      comment: 'Only src/engines/onnx opens onnxruntime-node: models run behind the engine runtime.',
      from: { path: '^src/', pathNot: '^src/engines/onnx/' },
      to: { path: 'node_modules/onnxruntime-node/' },
    },
  ],
  options: {
    // `import type` edges are seen (and marked type-only) so that the floors cover them too.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // The demo-model generator that server.ts loads on demand is development code outside src/.
    exclude: { path: '^(models|test|load-tests)/' },
    moduleSystems: ['es6'],
  },
};

// For the docs test (docs/ARCHITECTURE.md names these floors); not enumerable, so not part of the configuration.
Object.defineProperty(module.exports, 'floors', { value: FLOORS, enumerable: false });
