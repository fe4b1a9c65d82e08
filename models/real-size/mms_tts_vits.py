"""MMS-TTS VITS (transformers' VitsModel, the configuration of facebook/mms-tts-*) at real size, exported in
the `vits-hf` layout that optimum writes for those checkpoints: `model.onnx` with `input_ids`, `attention_mask`
(int64, [B, T]) → `waveform` [B, samples] (and `spectrogram`), 16 kHz, noise and speaking-rate scales frozen
into the graph, output length computed in the graph from the predicted durations; `config.json`, `vocab.json`,
`tokenizer_config.json` as Kuma's vits-hf loader (src/engines/tts/vits-layouts.ts) reads them.

Published configuration: text encoder of 6 post-LN layers, hidden 192, 2 heads, relative-position window 4,
FFN 768 (kernel 3); stochastic duration predictor (3-layer DDS convs, 4 spline flows of 10 bins, tail 5);
residual coupling flow of 4 layers (WaveNet of 4 layers, kernel 5); HiFi-GAN with upsample rates 8,8,2,2
(kernels 16,16,4,4) from 512 channels, resblock kernels 3,7,11 with dilations 1,3,5; posterior encoder
(training only) of 16 WaveNet layers over 513 spectrogram bins.
"""
import math
import os

import torch
from torch import nn

from export_util import count_parameters, export_onnx, write_json
from vits_duration import StochasticDurationPredictor
from vits_modules import CouplingBlock, HifiGan, PosteriorEncoder, TextEncoder, kaiming

# ≈ 36.3 M: the Hugging Face hub's parameter count of facebook/mms-tts-* checkpoints (e.g. mms-tts-eng).
PUBLISHED_PARAMS = 36_300_000
CONFIG = dict(
    hidden=192, layers=6, heads=2, window=4, ffn=768, ffn_kernel=3, flow=192, spectrogram_bins=513,
    dds_kernel=3, dds_layers=3, duration_flows=4, spline_bins=10, spline_tail=5.0,
    prior_flows=4, prior_wavenet_layers=4, posterior_wavenet_layers=16, wavenet_kernel=5,
    upsample_channels=512, upsample_rates=[8, 8, 2, 2], upsample_kernels=[16, 16, 4, 4],
    resblock_kernels=[3, 7, 11], resblock_dilations=[[1, 3, 5], [1, 3, 5], [1, 3, 5]],
    noise_scale=0.667, noise_scale_duration=0.8, speaking_rate=1.0, sampling_rate=16_000,
)
# Bambara letters (the demo vits-hf voice's vocabulary); `_` (id 0) is the blank that add_blank intersperses.
VOCAB = ["_", " "] + list("abcdefghijklmnoprstuwyz") + ["ŋ", "ɔ", "ɛ", "ɲ"]
# Random weights predict random durations (a few frames or thousands per token), and the cost of VITS grows
# with the output length; the final affine flow of the duration predictor is set so that tokens last ≈ 2.6
# frames on average after the noise and ceil (measured with this seed over a Bambara sentence): with the
# interspersed blanks, ≈ 12 characters per second at 62.5 frames/s, a conversational pace.
LOG_DURATION, DURATION_SPREAD = 0.3, 4.0


class Vits(nn.Module):
    def __init__(self, cfg: dict, vocab: int):
        super().__init__()
        self.cfg = cfg
        c = cfg
        self.text_encoder = TextEncoder(vocab, c["hidden"], c["layers"], c["heads"], c["window"], c["ffn"], c["ffn_kernel"], c["flow"])
        self.flow = CouplingBlock(c["flow"], c["hidden"], c["wavenet_kernel"], c["prior_wavenet_layers"], c["prior_flows"])
        self.decoder = HifiGan(c["flow"], c["upsample_channels"], c["upsample_rates"], c["upsample_kernels"], c["resblock_kernels"], c["resblock_dilations"])
        self.duration_predictor = StochasticDurationPredictor(c["hidden"], c["dds_kernel"], c["dds_layers"], c["duration_flows"], c["spline_bins"], c["spline_tail"])
        self.posterior_encoder = PosteriorEncoder(c["spectrogram_bins"], c["flow"], c["hidden"], c["wavenet_kernel"], c["posterior_wavenet_layers"])

    def forward(self, input_ids, attention_mask):
        """VitsModel.forward at inference, scales frozen; returns waveform [B, samples], spectrogram [B, flow, frames]."""
        c = self.cfg
        input_mask = attention_mask.unsqueeze(-1).float()  # [B, T, 1]
        hidden, prior_means, prior_log_variances = self.text_encoder(input_ids, input_mask)
        input_mask = input_mask.transpose(1, 2)  # [B, 1, T]
        log_duration = self.duration_predictor.reverse(hidden.transpose(1, 2), input_mask, c["noise_scale_duration"])
        duration = torch.ceil(torch.exp(log_duration) * input_mask * (1.0 / c["speaking_rate"]))  # [B, 1, T]
        lengths = torch.clamp_min(torch.sum(duration, [1, 2]), 1).long()
        frames = torch.arange(lengths.max())
        output_mask = (frames[None, :] < lengths[:, None]).unsqueeze(1).float()  # [B, 1, L]
        # Monotonic alignment from the durations: token t covers frames [cum[t−1], cum[t]).
        ends = torch.cumsum(duration, dim=-1)[:, 0, :, None]  # [B, T, 1]
        covered = (frames[None, None, :].float() < ends).float()  # [B, T, L]
        path = (covered - nn.functional.pad(covered, [0, 0, 1, 0])[:, :-1]) * input_mask.transpose(1, 2) * output_mask
        means = (path.transpose(1, 2) @ prior_means).transpose(1, 2)  # [B, flow, L]
        log_variances = (path.transpose(1, 2) @ prior_log_variances).transpose(1, 2)
        latents = means + torch.randn_like(means) * torch.exp(log_variances) * c["noise_scale"]
        spectrogram = self.flow.reverse(latents, output_mask) * output_mask
        return self.decoder(spectrogram).squeeze(1), spectrogram


def initialise(model: Vits) -> None:
    """transformers' VitsPreTrainedModel._init_weights: Linear and Embedding N(0, 0.02), unit layer norms,
    Kaiming-normal convolutions (the WaveNets' were initialised before weight norm, in vits_modules.py)."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)
        elif isinstance(m, (nn.Conv1d, nn.ConvTranspose1d)) and not hasattr(m, "weight_v"):
            kaiming(m)
    with torch.no_grad():
        affine = model.duration_predictor.flows[0]  # the last flow run at inference
        affine.log_scale[0] = math.log(DURATION_SPREAD)
        affine.translate[0] = -LOG_DURATION * DURATION_SPREAD


def tokens(text: str) -> list:
    """VitsTokenizer for a character voice with add_blank: [0, c1, 0, c2, …, 0]."""
    ids = [VOCAB.index(ch) for ch in text.lower() if ch in VOCAB]
    return [0] + [x for i in ids for x in (i, 0)]


def build(out_dir: str) -> dict:
    model = Vits(CONFIG, len(VOCAB))
    initialise(model)
    params = count_parameters(model)
    model.eval()
    ids = torch.tensor([tokens("i ni ce, i ka kɛnɛ wa?")])
    export_onnx(
        model,
        (ids, torch.ones_like(ids)),
        os.path.join(out_dir, "model.onnx"),
        ["input_ids", "attention_mask"],
        ["waveform", "spectrogram"],
        {
            "input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "sequence_length"},
            "waveform": {0: "batch_size", 1: "n_samples"},
            "spectrogram": {0: "batch_size", 2: "num_frames"},
        },
    )
    write_json(os.path.join(out_dir, "config.json"), hf_config(CONFIG, len(VOCAB)))
    write_json(os.path.join(out_dir, "vocab.json"), {ch: i for i, ch in enumerate(VOCAB)})
    write_json(
        os.path.join(out_dir, "tokenizer_config.json"),
        {
            "add_blank": True, "clean_up_tokenization_spaces": True, "is_uroman": False, "language": "bam",
            "normalize": True, "pad_token": "_", "phonemize": False, "tokenizer_class": "VitsTokenizer", "unk_token": "<unk>",
        },
    )
    exported = count_parameters(model.text_encoder) + count_parameters(model.flow) + count_parameters(model.decoder)
    exported += count_parameters(model.duration_predictor) - sum(count_parameters(m) for m in inference_unused(model.duration_predictor))
    return {"params": params, "published_params": PUBLISHED_PARAMS, "engine": "vits-hf", "inference_params": exported}


def inference_unused(sdp) -> list:
    """Duration-predictor parts that only training runs: the posterior flows and the skipped spline flow."""
    return [sdp.post_conv_pre, sdp.post_conv_proj, sdp.post_conv_dds, sdp.post_flows, sdp.flows[1]]


def hf_config(c: dict, vocab: int) -> dict:
    """The checkpoints' config.json (VitsConfig), as Kuma's vits-hf loader and transformers read it."""
    return {
        "architectures": ["VitsModel"], "model_type": "vits", "vocab_size": vocab, "hidden_size": c["hidden"],
        "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"], "window_size": c["window"], "use_bias": True,
        "ffn_dim": c["ffn"], "ffn_kernel_size": c["ffn_kernel"], "flow_size": c["flow"], "spectrogram_bins": c["spectrogram_bins"],
        "hidden_act": "relu", "layer_norm_eps": 1e-5, "initializer_range": 0.02, "use_stochastic_duration_prediction": True,
        "num_speakers": 1, "speaker_embedding_size": 0, "upsample_initial_channel": c["upsample_channels"],
        "upsample_rates": c["upsample_rates"], "upsample_kernel_sizes": c["upsample_kernels"],
        "resblock_kernel_sizes": c["resblock_kernels"], "resblock_dilation_sizes": c["resblock_dilations"],
        "leaky_relu_slope": 0.1, "depth_separable_channels": 2, "depth_separable_num_layers": c["dds_layers"],
        "duration_predictor_flow_bins": c["spline_bins"], "duration_predictor_tail_bound": c["spline_tail"],
        "duration_predictor_kernel_size": c["dds_kernel"], "duration_predictor_num_flows": c["duration_flows"],
        "duration_predictor_filter_channels": 256, "prior_encoder_num_flows": c["prior_flows"],
        "prior_encoder_num_wavenet_layers": c["prior_wavenet_layers"], "posterior_encoder_num_wavenet_layers": c["posterior_wavenet_layers"],
        "wavenet_kernel_size": c["wavenet_kernel"], "wavenet_dilation_rate": 1, "noise_scale": c["noise_scale"],
        "noise_scale_duration": c["noise_scale_duration"], "speaking_rate": c["speaking_rate"], "sampling_rate": c["sampling_rate"],
        "pad_token_id": 0,
    }


BUILDERS = {"mms-tts-vits": build}
