"""NLLB-200 distilled 600M (M2M100ForConditionalGeneration) at real size, written from the published
architecture (transformers' modeling_m2m_100 and the checkpoint's config.json), exported in the Hugging Face
optimum / transformers.js layout (`Xenova/nllb-200-distilled-600M`): `onnx/encoder_model.onnx` and the merged
decoder `onnx/decoder_model_merged.onnx` (nllb_merge.py), with config.json and generation_config.json. The
tokenizer files are written by models/real-size/sidecars.ts (the TypeScript tokenizer builder of the demo pack).

Published configuration: d_model 1024, 12 encoder + 12 decoder layers, 16 heads, FFN 4096, ReLU, pre-layer-norm
layers with a final layer norm on each stack, token embeddings scaled by sqrt(d_model) and shared by encoder,
decoder and the (bias-free) LM head, sinusoidal positions offset by the padding id + 1 (= 2), vocabulary 256,206.
"""
import math
import os

import torch
from torch import nn

from export_util import count_parameters, export_onnx, init_like_hf, write_json
from nllb_merge import write_merged_decoder

PAD, BOS, EOS, UNK = 1, 0, 2, 3
# ≈ 615 M: the Hugging Face hub's parameter count of facebook/nllb-200-distilled-600M (the "600M" of the name
# rounds it). From the config: 256,206 × 1024 shared embedding + 12 × 12.6 M encoder + 12 × 16.8 M decoder layers.
PUBLISHED_PARAMS = 615_000_000
CONFIGS = {
    "nllb-600m": dict(vocab=256_206, d=1024, layers=12, heads=16, ffn=4096, max_positions=1024),
    # A reduced width with the same graph, for checking the export quickly (not in the pack).
    "nllb-tiny": dict(vocab=1_000, d=64, layers=2, heads=4, ffn=128, max_positions=1024),
}
# Additive mask value of a masked position: transformers uses the dtype's most negative number.
MASKED = torch.finfo(torch.float32).min


def sinusoidal_table(positions: int, dim: int) -> torch.Tensor:
    """M2M100SinusoidalPositionalEmbedding.get_embedding: sin half then cos half, the padding row zero."""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freqs = torch.exp(torch.arange(half, dtype=torch.float32) * -step)
    angles = torch.arange(positions, dtype=torch.float32)[:, None] * freqs[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    table[PAD, :] = 0
    return table


class Attention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def split(self, x):  # [B, T, d] → [B, H, T, hd]: the layout of the exported KV cache
        return x.view(x.shape[0], -1, self.heads, self.head_dim).transpose(1, 2)

    def query(self, x):
        return self.split(self.q_proj(x) * self.scaling)

    def keys_values(self, x):
        return self.split(self.k_proj(x)), self.split(self.v_proj(x))

    def attend(self, q, k, v, bias):
        weights = torch.softmax(q @ k.transpose(-1, -2) + bias, dim=-1)
        out = (weights @ v).transpose(1, 2)
        return self.out_proj(out.reshape(out.shape[0], -1, self.heads * self.head_dim))


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, h, bias):
        x = self.self_attn_layer_norm(h)
        k, v = self.self_attn.keys_values(x)
        h = h + self.self_attn.attend(self.self_attn.query(x), k, v, bias)
        return h + self.fc2(torch.relu(self.fc1(self.final_layer_norm(h))))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = Attention(d, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, h, self_bias, past, cross_bias, encoder_hidden, cross):
        """`past`: this layer's cached (key, value) or None; `cross`: the cached encoder (key, value) or None,
        then computed from `encoder_hidden`. Returns h and the layer's presents (self k, v, cross k, v)."""
        x = self.self_attn_layer_norm(h)
        k, v = self.self_attn.keys_values(x)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        h = h + self.self_attn.attend(self.self_attn.query(x), k, v, self_bias)
        x = self.encoder_attn_layer_norm(h)
        ck, cv = cross if cross is not None else self.encoder_attn.keys_values(encoder_hidden)
        h = h + self.encoder_attn.attend(self.encoder_attn.query(x), ck, cv, cross_bias)
        h = h + self.fc2(torch.relu(self.fc1(self.final_layer_norm(h))))
        return h, (k, v, ck, cv)


class Stack(nn.Module):
    """What the encoder and the decoder have in common: the shared embedding (scaled), sinusoidal positions."""

    def __init__(self, shared: nn.Embedding, positions: torch.Tensor, d: int):
        super().__init__()
        self.embed_tokens = shared
        self.embed_scale = math.sqrt(d)
        # Persistent, so the two decoder graphs reference one initializer (nllb_merge.py shares them by name).
        self.register_buffer("embed_positions", positions)

    def embed(self, ids, past_length=0):
        # create_position_ids_from_input_ids: padding keeps position PAD, real tokens count from PAD + 1.
        mask = ids.ne(PAD).int()
        positions = (torch.cumsum(mask, dim=1).type_as(mask) + past_length) * mask + PAD
        pos = self.embed_positions.index_select(0, positions.view(-1).long()).view(ids.shape[0], ids.shape[1], -1)
        return self.embed_tokens(ids) * self.embed_scale + pos


def padding_bias(mask):  # [B, S] int64 → [B, 1, 1, S] additive
    return (1.0 - mask[:, None, None, :].float()) * MASKED


class Encoder(Stack):
    def __init__(self, shared, positions, d, layers, heads, ffn):
        super().__init__(shared, positions, d)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ffn) for _ in range(layers))
        self.layer_norm = nn.LayerNorm(d)

    def forward(self, input_ids, attention_mask):
        h, bias = self.embed(input_ids), padding_bias(attention_mask)
        for layer in self.layers:
            h = layer(h, bias)
        return self.layer_norm(h)


class Decoder(Stack):
    def __init__(self, shared, positions, d, layers, heads, ffn):
        super().__init__(shared, positions, d)
        self.layers = nn.ModuleList(DecoderLayer(d, heads, ffn) for _ in range(layers))
        self.layer_norm = nn.LayerNorm(d)

    def forward(self, input_ids, encoder_attention_mask, encoder_hidden_states=None, past=None):
        """`past`: per layer (self k, self v, cross k, cross v), or None on step 0. Returns logits, presents."""
        past_length = past[0][0].shape[2] if past is not None else 0
        h = self.embed(input_ids, past_length)
        # Causal over past + new positions: query i (at past_length + i) sees keys j ≤ past_length + i.
        steps = input_ids.shape[1]
        query_at = torch.arange(steps)[:, None] + past_length
        key_at = torch.arange(steps + past_length)[None, :]
        self_bias = (key_at > query_at).float() * MASKED
        cross_bias = padding_bias(encoder_attention_mask)
        presents = []
        for i, layer in enumerate(self.layers):
            h, present = layer(h, self_bias, past[i][:2] if past else None, cross_bias, encoder_hidden_states, past[i][2:] if past else None)
            presents.append(present)
        # The LM head is the shared embedding itself (tie_word_embeddings), without bias.
        return nn.functional.linear(self.layer_norm(h), self.embed_tokens.weight), presents


class M2M100(nn.Module):
    def __init__(self, vocab, d, layers, heads, ffn, max_positions):
        super().__init__()
        self.shared = nn.Embedding(vocab, d, padding_idx=PAD)
        positions = sinusoidal_table(max_positions + PAD + 1, d)
        self.encoder = Encoder(self.shared, positions.clone(), d, layers, heads, ffn)
        self.decoder = Decoder(self.shared, positions.clone(), d, layers, heads, ffn)


def build(out_dir: str, name: str = "nllb-600m") -> dict:
    cfg = CONFIGS[name]
    model = M2M100(**cfg)
    init_like_hf(model, std=0.02)  # config.init_std
    with torch.no_grad():
        model.shared.weight[PAD].zero_()  # transformers zeroes the padding row of embeddings
        # Random weights copy their input token (the residual stream carries its embedding to the tied LM head),
        # so step 0 would repeat the target-language token for ever: a translation that decodes to nothing, and
        # a bridge with nothing to say. Zero rows (specials, language codes and <mask>) never win an argmax over
        # random ones, so the model writes ordinary pieces. A model run costs the same.
        for token in (BOS, EOS, UNK):
            model.shared.weight[token].zero_()
        model.shared.weight[256001:].zero_()
    params = count_parameters(model)
    model.eval()
    onnx_dir = os.path.join(out_dir, "onnx")
    export_onnx(
        model.encoder,
        (torch.tensor([[256047, 5, 6, 7, EOS], [256047, 8, EOS, PAD, PAD]]) % cfg["vocab"], torch.tensor([[1] * 5, [1, 1, 1, 0, 0]])),
        os.path.join(onnx_dir, "encoder_model.onnx"),
        ["input_ids", "attention_mask"],
        ["last_hidden_state"],
        {
            "input_ids": {0: "batch_size", 1: "encoder_sequence_length"},
            "attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
            "last_hidden_state": {0: "batch_size", 1: "encoder_sequence_length"},
        },
    )
    write_merged_decoder(model.decoder, cfg, os.path.join(onnx_dir, "decoder_model_merged.onnx"))
    write_json(os.path.join(out_dir, "config.json"), hf_config(cfg))
    write_json(
        os.path.join(out_dir, "generation_config.json"),
        {"bos_token_id": BOS, "decoder_start_token_id": EOS, "eos_token_id": EOS, "max_length": 200, "pad_token_id": PAD},
    )
    return {"params": params, "published_params": PUBLISHED_PARAMS, "engine": "nllb"}


def hf_config(cfg: dict) -> dict:
    """The checkpoint's config.json (facebook/nllb-200-distilled-600M), sizes from `cfg`."""
    return {
        "_name_or_path": "kuma/real-size-nllb-200-distilled-600M",
        "architectures": ["M2M100ForConditionalGeneration"],
        "model_type": "m2m_100",
        "activation_function": "relu",
        "d_model": cfg["d"],
        "encoder_layers": cfg["layers"],
        "decoder_layers": cfg["layers"],
        "num_hidden_layers": cfg["layers"],
        "encoder_attention_heads": cfg["heads"],
        "decoder_attention_heads": cfg["heads"],
        "encoder_ffn_dim": cfg["ffn"],
        "decoder_ffn_dim": cfg["ffn"],
        "max_position_embeddings": cfg["max_positions"],
        "scale_embedding": True,
        "tie_word_embeddings": True,
        "is_encoder_decoder": True,
        "use_cache": True,
        "vocab_size": cfg["vocab"],
        "init_std": 0.02,
        "bos_token_id": BOS,
        "pad_token_id": PAD,
        "eos_token_id": EOS,
        "decoder_start_token_id": EOS,
        "max_length": 200,
        "tokenizer_class": "NllbTokenizer",
        "torch_dtype": "float32",
    }


BUILDERS = {"nllb-600m": build}
