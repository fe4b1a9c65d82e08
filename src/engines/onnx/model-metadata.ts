/**
 * Reads an ONNX file's `metadata_props` (sherpa-onnx keeps sample_rate, add_blank, n_speakers there)
 * without decoding the graph: the top-level ModelProto fields are walked with a protobuf reader and
 * everything but field 14 is skipped, so a large model costs one file read and no big allocations.
 */
import fs from 'node:fs';
import protobuf from 'protobufjs';

const METADATA_PROPS_FIELD = 14;

export function readModelMetadata(file: string): Record<string, string> {
  const reader = protobuf.Reader.create(fs.readFileSync(file));
  const props: Record<string, string> = {};
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === METADATA_PROPS_FIELD && wireType === 2) {
      const entry = protobuf.Reader.create(reader.bytes());
      let key = '';
      let value = '';
      while (entry.pos < entry.len) {
        const t = entry.uint32();
        if (t >>> 3 === 1) key = entry.string();
        else if (t >>> 3 === 2) value = entry.string();
        else entry.skipType(t & 7);
      }
      props[key] = value;
    } else {
      reader.skipType(wireType);
    }
  }
  return props;
}
