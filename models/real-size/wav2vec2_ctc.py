"""Wav2Vec2ForCTC at real size, written from the published architecture (transformers' modeling_wav2vec2),
exported in the `ctc-wav2vec2` layout: `input_values [B,N]` → `logits [B,frames,V]` plus the HF sidecars.

Two published configurations:
- wav2vec2-base: 12 layers, d 768, FFN 3072, 12 heads, group-norm feature encoder without conv biases,
  post-layer-norm transformer (`do_stable_layer_norm: false`).
- XLS-R-300M: 24 layers, d 1024, FFN 4096, 16 heads, layer-norm feature encoder with conv biases,
  pre-layer-norm transformer with a final layer norm (`do_stable_layer_norm: true`).
Both: the 7-layer conv feature encoder (512 channels, kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2),
feature projection, and the weight-normed convolutional positional embedding (kernel 128, 16 groups).
"""
import math
import os

import torch
from torch import nn

from export_util import CTC_TOKENS, calibrate_ctc_head, calibration_audio, count_parameters, export_onnx, init_like_hf, write_json

CONV_KERNEL = [10, 3, 3, 3, 3, 2, 2]
CONV_STRIDE = [5, 2, 2, 2, 2, 2, 2]
CONV_DIM = 512

CONFIGS = {
    "wav2vec2-base": dict(hidden=768, layers=12, heads=12, ffn=3072, stable=False, published_params=94_400_000),
    "xls-r-300m": dict(hidden=1024, layers=24, heads=16, ffn=4096, stable=True, published_params=315_000_000),
}


class FeatureEncoder(nn.Module):
    def __init__(self, stable: bool):
        super().__init__()
        self.stable = stable
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        in_ch = 1
        for i, (k, s) in enumerate(zip(CONV_KERNEL, CONV_STRIDE)):
            self.convs.append(nn.Conv1d(in_ch, CONV_DIM, k, s, bias=stable))
            if stable:
                self.norms.append(nn.LayerNorm(CONV_DIM))
            elif i == 0:
                self.norms.append(nn.GroupNorm(CONV_DIM, CONV_DIM, affine=True))
            in_ch = CONV_DIM
        for conv in self.convs:
            nn.init.kaiming_normal_(conv.weight)

    def forward(self, x):  # [B, N] → [B, 512, T]
        h = x[:, None, :]
        for i, conv in enumerate(self.convs):
            h = conv(h)
            if self.stable:
                h = self.norms[i](h.transpose(1, 2)).transpose(1, 2)
            elif i == 0:
                h = self.norms[0](h)
            h = nn.functional.gelu(h)
        return h


class PositionalConv(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        conv = nn.Conv1d(hidden, hidden, 128, padding=64, groups=16)
        nn.init.normal_(conv.weight, 0, 2 * math.sqrt(1 / (128 * hidden / 16)))
        nn.init.zeros_(conv.bias)
        self.conv = nn.utils.weight_norm(conv, name="weight", dim=2)

    def forward(self, h):  # [B, T, d]
        x = self.conv(h.transpose(1, 2))
        x = x[:, :, :-1]  # the even kernel pads one frame too many
        return nn.functional.gelu(x).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.q_proj = nn.Linear(hidden, hidden)
        self.k_proj = nn.Linear(hidden, hidden)
        self.v_proj = nn.Linear(hidden, hidden)
        self.out_proj = nn.Linear(hidden, hidden)

    def forward(self, h):
        b, t, d = h.shape
        split = lambda x: x.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        q = split(self.q_proj(h) * (self.head_dim ** -0.5))
        k = split(self.k_proj(h))
        v = split(self.v_proj(h))
        weights = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, d)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, stable: bool):
        super().__init__()
        self.stable = stable
        self.attention = Attention(hidden, heads)
        self.layer_norm = nn.LayerNorm(hidden)
        self.intermediate_dense = nn.Linear(hidden, ffn)
        self.output_dense = nn.Linear(ffn, hidden)
        self.final_layer_norm = nn.LayerNorm(hidden)

    def feed_forward(self, h):
        return self.output_dense(nn.functional.gelu(self.intermediate_dense(h)))

    def forward(self, h):
        if self.stable:  # pre-LN (Wav2Vec2EncoderLayerStableLayerNorm)
            h = h + self.attention(self.layer_norm(h))
            return h + self.feed_forward(self.final_layer_norm(h))
        h = self.layer_norm(h + self.attention(h))  # post-LN (Wav2Vec2EncoderLayer)
        return self.final_layer_norm(h + self.feed_forward(h))


class Wav2Vec2ForCtc(nn.Module):
    def __init__(self, hidden, layers, heads, ffn, stable, vocab):
        super().__init__()
        self.stable = stable
        self.feature_extractor = FeatureEncoder(stable)
        self.projection_norm = nn.LayerNorm(CONV_DIM)
        self.projection = nn.Linear(CONV_DIM, hidden)
        # Used only for masked pre-training; it is part of every published checkpoint's parameter count.
        self.masked_spec_embed = nn.Parameter(torch.zeros(hidden).uniform_())
        self.pos_conv = PositionalConv(hidden)
        self.encoder_norm = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, ffn, stable) for _ in range(layers))
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, input_values):
        h = self.feature_extractor(input_values).transpose(1, 2)
        h = self.projection(self.projection_norm(h))
        h = h + self.pos_conv(h)
        if not self.stable:
            h = self.encoder_norm(h)
        for layer in self.layers:
            h = layer(h)
        if self.stable:
            h = self.encoder_norm(h)
        return self.lm_head(h)


def build(name: str, out_dir: str) -> dict:
    cfg = CONFIGS[name]
    vocab = len(CTC_TOKENS)
    model = Wav2Vec2ForCtc(cfg["hidden"], cfg["layers"], cfg["heads"], cfg["ffn"], cfg["stable"], vocab)
    init_like_hf(model.layers)
    init_like_hf(model.projection)
    init_like_hf(model.lm_head)
    # Calibrated on 8 s of seeded brown noise: transcripts of a trained model's length (export_util.py).
    model.eval()
    with torch.no_grad():
        calibration = model(calibration_audio(8))[0]
    calibrate_ctc_head(calibration, model.lm_head.bias, CTC_TOKENS.index("[PAD]"), CTC_TOKENS.index("|"), CTC_TOKENS.index("[UNK]"))
    params = count_parameters(model)
    export_onnx(
        model,
        (torch.randn(1, 16000),),
        os.path.join(out_dir, "model.onnx"),
        ["input_values"],
        ["logits"],
        {"input_values": {0: "batch_size", 1: "sequence_length"}, "logits": {0: "batch_size", 1: "sequence_length"}},
    )
    write_json(os.path.join(out_dir, "vocab.json"), {t: i for i, t in enumerate(CTC_TOKENS)})
    write_json(
        os.path.join(out_dir, "config.json"),
        {
            "architectures": ["Wav2Vec2ForCTC"],
            "model_type": "wav2vec2",
            "hidden_size": cfg["hidden"],
            "num_hidden_layers": cfg["layers"],
            "num_attention_heads": cfg["heads"],
            "intermediate_size": cfg["ffn"],
            "hidden_act": "gelu",
            "conv_dim": [CONV_DIM] * 7,
            "conv_kernel": CONV_KERNEL,
            "conv_stride": CONV_STRIDE,
            "conv_bias": cfg["stable"],
            "feat_extract_norm": "layer" if cfg["stable"] else "group",
            "do_stable_layer_norm": cfg["stable"],
            "num_conv_pos_embeddings": 128,
            "num_conv_pos_embedding_groups": 16,
            "vocab_size": vocab,
            "pad_token_id": CTC_TOKENS.index("[PAD]"),
            "ctc_loss_reduction": "mean",
        },
    )
    write_json(
        os.path.join(out_dir, "preprocessor_config.json"),
        {
            "do_normalize": True,
            "feature_extractor_type": "Wav2Vec2FeatureExtractor",
            "feature_size": 1,
            "padding_side": "right",
            "padding_value": 0,
            "return_attention_mask": cfg["stable"],
            "sampling_rate": 16000,
        },
    )
    write_json(
        os.path.join(out_dir, "tokenizer_config.json"),
        {"tokenizer_class": "Wav2Vec2CTCTokenizer", "word_delimiter_token": "|", "unk_token": "[UNK]", "pad_token": "[PAD]", "do_lower_case": False},
    )
    return {"params": params, "published_params": cfg["published_params"], "engine": "ctc-wav2vec2"}
