"""VITS building blocks at MMS-TTS size, written from the published architecture (transformers'
modeling_vits, the VitsConfig of facebook/mms-tts-*): the text encoder (transformer with windowed relative
position attention), the WaveNet of the flows, the residual coupling flow, the HiFi-GAN decoder, and the
posterior encoder (used only in training, but part of every published checkpoint and of its parameter count).
The stochastic duration predictor is in vits_duration.py.
"""
import math

import torch
from torch import nn


def padding(kernel: int, dilation: int = 1) -> int:
    return (kernel * dilation - dilation) // 2


class RelativeAttention(nn.Module):
    """VitsAttention: multi-head attention whose logits and outputs add learned embeddings of the relative
    position j − i for |j − i| ≤ window. transformers gets them by padding and reshaping [T, 2T−1] tables;
    here each query gathers its 2·window+1 neighbours, the same sums without the quadratic padding tricks that
    tracing cannot keep dynamic."""

    def __init__(self, d: int, heads: int, window: int):
        super().__init__()
        self.heads, self.head_dim, self.window = heads, d // heads, window
        self.scaling = self.head_dim ** -0.5
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))
        self.emb_rel_k = nn.Parameter(torch.randn(1, 2 * window + 1, self.head_dim) * self.scaling)
        self.emb_rel_v = nn.Parameter(torch.randn(1, 2 * window + 1, self.head_dim) * self.scaling)

    def split(self, x):
        return x.view(x.shape[0], -1, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, bias):  # x [B, T, d]; bias [B, 1, 1, T] additive padding mask
        q = self.split(self.q_proj(x) * self.scaling)
        k, v = self.split(self.k_proj(x)), self.split(self.v_proj(x))
        steps, span = x.shape[1], 2 * self.window + 1
        i = torch.arange(steps)[:, None]
        # Keys: logit[i, j] += q_i · emb_k[j − i + window] where |j − i| ≤ window.
        offset = torch.arange(steps)[None, :] - i + self.window  # [T, T]
        inside = ((offset >= 0) & (offset < span)).float()
        rel_logits = q @ self.emb_rel_k[0].transpose(0, 1)  # [B, H, T, span]
        index = offset.clamp(0, span - 1).expand(q.shape[0], self.heads, steps, steps)
        scores = q @ k.transpose(-1, -2) + torch.gather(rel_logits, -1, index) * inside + bias
        probs = torch.softmax(scores, dim=-1)
        # Values: out_i += Σ_r probs[i, i + r − window] · emb_v[r] over the keys inside the sequence.
        key_at = i + torch.arange(span)[None, :] - self.window  # [T, span]
        present = ((key_at >= 0) & (key_at < steps)).float()
        near = torch.gather(probs, -1, key_at.clamp(0, steps - 1).expand(q.shape[0], self.heads, steps, span)) * present
        out = probs @ v + near @ self.emb_rel_v[0]
        out = out.transpose(1, 2)
        return self.out_proj(out.reshape(out.shape[0], -1, self.heads * self.head_dim))


class FeedForward(nn.Module):
    """VitsFeedForward: two convolutions over time (kernel 3), ReLU, padding positions zeroed."""

    def __init__(self, d: int, ffn: int, kernel: int):
        super().__init__()
        self.conv_1 = nn.Conv1d(d, ffn, kernel, padding=padding(kernel))
        self.conv_2 = nn.Conv1d(ffn, d, kernel, padding=padding(kernel))

    def forward(self, x, mask):  # x [B, T, d], mask [B, T, 1]
        x, mask = x.transpose(1, 2), mask.transpose(1, 2)
        x = torch.relu(self.conv_1(x * mask))
        return (self.conv_2(x * mask) * mask).transpose(1, 2)


class EncoderLayer(nn.Module):
    """Post-layer-norm transformer layer (VitsEncoderLayer)."""

    def __init__(self, d, heads, window, ffn, kernel):
        super().__init__()
        self.attention = RelativeAttention(d, heads, window)
        self.layer_norm = nn.LayerNorm(d)
        self.feed_forward = FeedForward(d, ffn, kernel)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x, mask, bias):
        x = self.layer_norm(x + self.attention(x, bias))
        return self.final_layer_norm(x + self.feed_forward(x, mask))


class TextEncoder(nn.Module):
    """VitsTextEncoder: scaled token embedding, 6 layers, then a 1×1 projection to the prior's means and log-variances."""

    def __init__(self, vocab, d, layers, heads, window, ffn, kernel, flow):
        super().__init__()
        self.d, self.flow = d, flow
        self.embed_tokens = nn.Embedding(vocab, d, padding_idx=0)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, window, ffn, kernel) for _ in range(layers))
        self.project = nn.Conv1d(d, 2 * flow, 1)

    def forward(self, ids, mask):  # mask [B, T, 1] float
        bias = (1.0 - mask.transpose(1, 2)[:, :, None, :]) * torch.finfo(torch.float32).min
        x = self.embed_tokens(ids) * math.sqrt(self.d) * mask
        for layer in self.layers:
            x = layer(x, mask, bias)
        x = x * mask
        stats = self.project(x.transpose(1, 2)).transpose(1, 2) * mask
        return x, stats[..., : self.flow], stats[..., self.flow :]


class WaveNet(nn.Module):
    """VitsWaveNet: gated dilated convolutions (weight-normed, as in the checkpoints) with residual and skip paths."""

    def __init__(self, hidden: int, kernel: int, layers: int, dilation_rate: int = 1):
        super().__init__()
        self.hidden = hidden
        self.in_layers, self.res_skip_layers = nn.ModuleList(), nn.ModuleList()
        for i in range(layers):
            dilation = dilation_rate ** i
            conv = nn.Conv1d(hidden, 2 * hidden, kernel, dilation=dilation, padding=padding(kernel, dilation))
            self.in_layers.append(nn.utils.weight_norm(kaiming(conv)))
            self.res_skip_layers.append(nn.utils.weight_norm(kaiming(nn.Conv1d(hidden, 2 * hidden if i < layers - 1 else hidden, 1))))

    def forward(self, x, mask):  # x [B, hidden, T], mask [B, 1, T]
        out = torch.zeros_like(x)
        last = len(self.in_layers) - 1
        for i, (gate, res_skip) in enumerate(zip(self.in_layers, self.res_skip_layers)):
            h = gate(x)
            acts = res_skip(torch.tanh(h[:, : self.hidden]) * torch.sigmoid(h[:, self.hidden :]))
            if i < last:
                x = (x + acts[:, : self.hidden]) * mask
                out = out + acts[:, self.hidden :]
            else:
                out = out + acts
        return out * mask


class CouplingLayer(nn.Module):
    """VitsResidualCouplingLayer (mean-only): the second half of the channels shifted by a WaveNet of the first."""

    def __init__(self, flow: int, hidden: int, kernel: int, layers: int):
        super().__init__()
        self.half = flow // 2
        self.conv_pre = nn.Conv1d(self.half, hidden, 1)
        self.wavenet = WaveNet(hidden, kernel, layers)
        self.conv_post = nn.Conv1d(hidden, self.half, 1)

    def reverse(self, x, mask):
        first, second = x[:, : self.half], x[:, self.half :]
        mean = self.conv_post(self.wavenet(self.conv_pre(first) * mask, mask)) * mask
        return torch.cat([first, (second - mean) * mask], dim=1)


class CouplingBlock(nn.Module):
    """VitsResidualCouplingBlock, run in reverse (inference): each layer after flipping the channel order."""

    def __init__(self, flow, hidden, kernel, layers, flows):
        super().__init__()
        self.flows = nn.ModuleList(CouplingLayer(flow, hidden, kernel, layers) for _ in range(flows))

    def reverse(self, x, mask):
        for flow in reversed(self.flows):
            x = flow.reverse(torch.flip(x, [1]), mask)
        return x


class ResBlock(nn.Module):
    """HifiGanResidualBlock: three (dilated conv, conv) pairs with leaky ReLU and residuals."""

    def __init__(self, channels, kernel, dilations, slope):
        super().__init__()
        self.slope = slope
        self.convs1 = nn.ModuleList(nn.Conv1d(channels, channels, kernel, dilation=d, padding=padding(kernel, d)) for d in dilations)
        self.convs2 = nn.ModuleList(nn.Conv1d(channels, channels, kernel, padding=padding(kernel)) for _ in dilations)

    def forward(self, x):
        for c1, c2 in zip(self.convs1, self.convs2):
            h = c1(nn.functional.leaky_relu(x, self.slope))
            x = x + c2(nn.functional.leaky_relu(h, self.slope))
        return x


class HifiGan(nn.Module):
    """VitsHifiGan: latent frames → 16 kHz waveform, upsampling ×8 ×8 ×2 ×2 (256 samples per frame)."""

    def __init__(self, flow, channels, rates, kernels, res_kernels, dilations, slope=0.1):
        super().__init__()
        self.slope, self.kinds = slope, len(res_kernels)
        self.conv_pre = nn.Conv1d(flow, channels, 7, padding=3)
        self.upsampler, self.resblocks = nn.ModuleList(), nn.ModuleList()
        for i, (rate, kernel) in enumerate(zip(rates, kernels)):
            self.upsampler.append(nn.ConvTranspose1d(channels >> i, channels >> (i + 1), kernel, rate, padding=(kernel - rate) // 2))
            for res_kernel, dilation in zip(res_kernels, dilations):
                self.resblocks.append(ResBlock(channels >> (i + 1), res_kernel, dilation, slope))
        self.conv_post = nn.Conv1d(channels >> len(rates), 1, 7, padding=3, bias=False)

    def forward(self, x):
        x = self.conv_pre(x)
        for i, up in enumerate(self.upsampler):
            x = up(nn.functional.leaky_relu(x, self.slope))
            blocks = self.resblocks[i * self.kinds : (i + 1) * self.kinds]
            x = sum(block(x) for block in blocks) / self.kinds
        return torch.tanh(self.conv_post(nn.functional.leaky_relu(x)))


class PosteriorEncoder(nn.Module):
    """VitsPosteriorEncoder: linear spectrogram → latent, used only to train; counted, never exported."""

    def __init__(self, bins, flow, hidden, kernel, layers):
        super().__init__()
        self.conv_pre = nn.Conv1d(bins, hidden, 1)
        self.wavenet = WaveNet(hidden, kernel, layers)
        self.conv_proj = nn.Conv1d(hidden, 2 * flow, 1)


def kaiming(conv):
    """transformers' VitsPreTrainedModel._init_weights for convolutions: Kaiming-normal weights, uniform biases.
    Applied to every convolution by mms_tts_vits.py; the WaveNet's here, before weight norm splits them."""
    nn.init.kaiming_normal_(conv.weight)
    if conv.bias is not None:
        bound = math.sqrt(conv.groups / (conv.in_channels * conv.kernel_size[0]))
        nn.init.uniform_(conv.bias, -bound, bound)
    return conv
