#!/usr/bin/env python3
"""Exports a RobotsMali NeMo ASR checkpoint to Kuma's `ctc-nemo` layout (models/MODELS.md, "NeMo CTC"):

    <out>/model.onnx          audio_signal [B, n_mels, T] float32 + length [B] int64 -> logprobs [B, T', V+1]
    <out>/tokens.txt          "<token> <id>" per line, the CTC blank `<blk>` last (id V)
    <out>/model_config.json   the checkpoint's config (Kuma computes the log-mel features from `preprocessor`)

Checkpoints it is written for (both CC BY 4.0, RobotsMali AI4D Lab; credit them when you serve them):
    RobotsMali/stt-bm-quartznet15x5-V0   QuartzNet 15x5 CTC, characters, 64 mels, 20 ms frames
    RobotsMali/soloni-114m-tdt-ctc-V0     FastConformer hybrid TDT-CTC, SentencePiece, 80 mels, 80 ms frames;
                                          Kuma serves its CTC head (the TDT head needs a transducer decoder)
Later versions (-v1, -v2, -v3) have the same architectures and export the same way.

This runs on your machine, not in Kuma's CI: it needs NVIDIA NeMo (pip install "nemo_toolkit[asr]"), PyTorch
and, for the check, onnxruntime. Kuma's own build machines cannot download checkpoints, so the script is
untested there; Kuma's loader is tested on graphs of the same shapes (models/real-size).

    python3 models/export/nemo_to_onnx.py RobotsMali/stt-bm-quartznet15x5-V0 models/quartznet-bm
    python3 models/export/nemo_to_onnx.py RobotsMali/soloni-114m-tdt-ctc-V0 models/soloni-bm-ctc
    python3 models/export/nemo_to_onnx.py path/to/model.nemo models/my-bm-ctc --check speech.wav

Then add the entry to a manifest, e.g. models/bambara/kuma-models.json:
    { "id": "sunjata-1", "engine": "ctc-nemo", "dir": "../soloni-bm-ctc" }
"""
import argparse
import json
import os
import sys


def load(source: str):
    import nemo.collections.asr as nemo_asr

    if os.path.exists(source):
        return nemo_asr.models.ASRModel.restore_from(source, map_location="cpu")
    return nemo_asr.models.ASRModel.from_pretrained(source, map_location="cpu")


def ctc_vocabulary(model) -> list:
    """The CTC head's tokens in id order (the blank, id V, is not in the list)."""
    head = getattr(model, "ctc_decoder", None) or model.decoder
    vocabulary = list(head.vocabulary)
    if not vocabulary:
        sys.exit("The checkpoint's CTC decoder has no vocabulary: is it a CTC or hybrid CTC model?")
    return vocabulary


def export(model, out: str) -> None:
    model.eval()
    if hasattr(model, "ctc_decoder"):
        # Hybrid RNNT/TDT + CTC: export the encoder with the CTC head, whose output is `logprobs`.
        model.set_export_config({"decoder_type": "ctc"})
    model.export(os.path.join(out, "model.onnx"), onnx_opset_version=17)


def write_sidecars(model, out: str, vocabulary: list) -> None:
    from omegaconf import OmegaConf

    with open(os.path.join(out, "tokens.txt"), "w", encoding="utf-8") as f:
        for i, token in enumerate(vocabulary + ["<blk>"]):
            # A space token is written as " <id>": Kuma (and sherpa-onnx) read a line holding only an id as the space.
            f.write(f"{token} {i}\n" if token != " " else f" {i}\n")
    config = OmegaConf.to_container(model.cfg, resolve=True)
    for key in ("train_ds", "validation_ds", "test_ds"):  # paths on the trainer's machine, of no use here
        config.pop(key, None)
    with open(os.path.join(out, "model_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")


def check(model, out: str, wav: str) -> None:
    """Runs the ONNX file and the PyTorch model on one recording and compares the CTC log-probabilities."""
    import numpy as np
    import onnxruntime as ort
    import soundfile as sf
    import torch

    audio, rate = sf.read(wav, dtype="float32")
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    if rate != 16000:
        sys.exit(f"{wav} is {rate} Hz; give a 16 kHz recording")
    signal = torch.tensor(audio)[None]
    length = torch.tensor([signal.shape[1]])
    with torch.no_grad():
        features, feature_length = model.preprocessor(input_signal=signal, length=length)
        encoded, encoded_length = model.encoder(audio_signal=features, length=feature_length)
        head = getattr(model, "ctc_decoder", None) or model.decoder
        expected = head(encoder_output=encoded).numpy()
    session = ort.InferenceSession(os.path.join(out, "model.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(["logprobs"], {"audio_signal": features.numpy(), "length": feature_length.numpy().astype(np.int64)})[0]
    frames = min(expected.shape[1], got.shape[1])
    diff = float(np.abs(expected[:, :frames] - got[:, :frames]).max())
    same = float((expected[0, :frames].argmax(-1) == got[0, :frames].argmax(-1)).mean())
    print(f"check: {frames} frames, max |logprob difference| {diff:.2e}, same greedy token on {same:.1%} of frames")
    if same < 0.99:
        sys.exit("The ONNX export disagrees with the PyTorch model: do not serve it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="Hugging Face repo id (RobotsMali/stt-bm-quartznet15x5-V0) or a .nemo file")
    parser.add_argument("out", help="output folder (created)")
    parser.add_argument("--check", metavar="WAV", help="16 kHz recording to compare the ONNX output with PyTorch's")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    model = load(args.source)
    vocabulary = ctc_vocabulary(model)
    export(model, args.out)
    write_sidecars(model, args.out, vocabulary)
    pre = model.cfg.preprocessor
    print(f"{args.source} -> {args.out}: {len(vocabulary)} tokens + blank, {pre.get('features')} mels, normalize {pre.get('normalize')}")
    if args.check:
        check(model, args.out, args.check)


if __name__ == "__main__":
    main()
