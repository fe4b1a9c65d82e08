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


# What a trained CTC model emits, for random weights to imitate: a character on about a sixth of the 20 ms frames
# (≈ 9 a second; on the demo voice's phrases, calibrated on brown noise, ≈ 13 a second: Bambara speech runs at
# ≈ 12), the word delimiter on about a fifth of those (words of ≈ 4–5 letters), and never [UNK]. Random weights put an argmax on every
# frame instead: a 2 s phrase came back as 93 characters with almost no word breaks, and everything after
# recognition (translation, the bridge) then worked on noise 4–5× longer than real words.
CTC_LETTER_FRAMES = 0.18
CTC_DELIMITER_SHARE = 0.2


def calibration_audio(seconds: int):
    """Brown noise (integrated white noise, normalised): its spectrum falls with frequency as speech's does, and
    a random wav2vec2's logits on it sit where they sit on speech (white noise or a vowel train are far off)."""
    import torch

    audio = torch.cumsum(torch.randn(seconds * 16000), 0)
    return ((audio - audio.mean()) / audio.std())[None]


def calibrate_ctc_head(logits, head_bias, blank: int, delimiter: int, unknown: int) -> None:
    """Raises the delimiter's and the blank's output biases so that, on `logits` ([frames, vocab]: the model's
    output on calibration input, before the change), the delimiter beats every letter on CTC_DELIMITER_SHARE
    of the frames and a non-blank token beats the blank on CTC_LETTER_FRAMES of them. The weights stay random;
    only two biases move, so a model run costs the same."""
    import torch

    letters = [i for i in range(logits.shape[1]) if i not in (blank, delimiter, unknown)]
    best_letter = logits[:, letters].max(dim=1).values
    to_delimiter = torch.quantile(best_letter - logits[:, delimiter], CTC_DELIMITER_SHARE)
    non_blank = torch.maximum(best_letter, logits[:, delimiter] + to_delimiter)
    to_blank = torch.quantile(non_blank - logits[:, blank], 1 - CTC_LETTER_FRAMES)
    with torch.no_grad():
        head_bias[delimiter] += to_delimiter
        head_bias[blank] += to_blank
        head_bias[unknown] -= 100.0
