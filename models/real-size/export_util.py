"""Shared helpers of the real-size pack: seeded initialisation, parameter counting, ONNX export and JSON sidecars.

Random weights in the real architectures: what the pack measures is cost (shapes, operators, bytes), never
accuracy. Initialisation follows the Hugging Face / NeMo defaults closely enough that activations stay in a
sane range (no NaN or overflow through 24 layers), which matters for realistic kernel timings.
"""
import json
import os

import torch


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)


def init_like_hf(module: torch.nn.Module, std: float = 0.02) -> None:
    """Normal(0, std) linears and embeddings, unit layer norms: transformers' `_init_weights` for these models."""
    for m in module.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, torch.nn.Embedding):
            torch.nn.init.normal_(m.weight, 0.0, std)
        elif isinstance(m, (torch.nn.LayerNorm, torch.nn.GroupNorm)):
            torch.nn.init.ones_(m.weight)
            torch.nn.init.zeros_(m.bias)


def count_parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def export_onnx(module, args, path, input_names, output_names, dynamic_axes, opset=14):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    module.eval()
    with torch.no_grad():
        torch.onnx.export(
            module,
            args,
            path,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            opset_version=opset,
            do_constant_folding=True,
        )


def export_nemo_ctc(model, n_mels: int, frames: int, out_dir: str, tokens: list, preprocessor: dict, encoder: dict, extra: dict = None) -> None:
    """A NeMo CTC model in the `ctc-nemo` layout: `audio_signal [B,n_mels,T]` + `length [B]` → `logprobs`, with
    `tokens.txt` (the blank last) and `model_config.json` (NeMo's preprocessor settings and the vocabulary)."""
    export_onnx(
        model,
        (torch.randn(1, n_mels, frames), torch.tensor([frames], dtype=torch.int64)),
        os.path.join(out_dir, "model.onnx"),
        ["audio_signal", "length"],
        ["logprobs"],
        {"audio_signal": {0: "B", 2: "T"}, "length": {0: "B"}, "logprobs": {0: "B", 1: "T"}},
    )
    with open(os.path.join(out_dir, "tokens.txt"), "w", encoding="utf-8") as f:
        for i, t in enumerate(tokens + ["<blk>"]):
            f.write(f"{t} {i}\n" if t != " " else f" {i}\n")
    common = {
        "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
        "sample_rate": 16000, "window_stride": 0.01, "window": "hann", "features": n_mels, "n_fft": 512,
        "preemph": 0.97, "log": True, "log_zero_guard_value": 2 ** -24, "frame_splicing": 1, "dither": 0, "pad_value": 0,
    }
    write_json(
        os.path.join(out_dir, "model_config.json"),
        {"sample_rate": 16000, "preprocessor": {**common, **preprocessor}, "encoder": encoder, "decoder": {"num_classes": len(tokens), "vocabulary": tokens}, **(extra or {})},
    )


def write_json(path: str, value) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=2)
        f.write("\n")


# The Bambara alphabet of the RobotsMali CTC vocabularies (Latin letters plus ɛ ɔ ɲ ŋ), word delimiter `|`,
# then [UNK] and [PAD] last: 37 tokens, the blank ([PAD]) = 36, as MODELS.md describes the real vocabulary.
BAMBARA_LETTERS = list("abcdefghijklmnopqrstuvwxyz") + ["ɛ", "ɔ", "ɲ", "ŋ", "'", "-", ".", "?"]
CTC_TOKENS = ["|"] + BAMBARA_LETTERS + ["[UNK]", "[PAD]"]
