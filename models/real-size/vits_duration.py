"""The stochastic duration predictor of VITS (transformers' VitsStochasticDurationPredictor), at MMS-TTS size:
dilated depth-separable convolutions over the text encoder's states condition a normalising flow (an
element-wise affine flow and rational-quadratic spline coupling flows) that turns Gaussian noise into log
durations. Only the inference direction (reverse) is written out; the training-only posterior flows
(`post_*`) are built so the parameter count matches the checkpoints, and never run.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


class DDSConv(nn.Module):
    """VitsDilatedDepthSeparableConv: depthwise dilated conv → LN → GELU → pointwise conv → LN → GELU, residual."""

    def __init__(self, channels: int, kernel: int, layers: int):
        super().__init__()
        self.convs_dilated, self.convs_pointwise = nn.ModuleList(), nn.ModuleList()
        self.norms_1, self.norms_2 = nn.ModuleList(), nn.ModuleList()
        for i in range(layers):
            dilation = kernel ** i
            self.convs_dilated.append(nn.Conv1d(channels, channels, kernel, groups=channels, dilation=dilation, padding=(kernel * dilation - dilation) // 2))
            self.convs_pointwise.append(nn.Conv1d(channels, channels, 1))
            self.norms_1.append(nn.LayerNorm(channels))
            self.norms_2.append(nn.LayerNorm(channels))

    def forward(self, x, mask, condition=None):
        if condition is not None:
            x = x + condition
        for dilated, pointwise, norm_1, norm_2 in zip(self.convs_dilated, self.convs_pointwise, self.norms_1, self.norms_2):
            h = F.gelu(norm_1(dilated(x * mask).transpose(1, -1)).transpose(1, -1))
            h = F.gelu(norm_2(pointwise(h).transpose(1, -1)).transpose(1, -1))
            x = x + h
        return x * mask


class ElementwiseAffine(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.translate = nn.Parameter(torch.zeros(channels, 1))
        self.log_scale = nn.Parameter(torch.zeros(channels, 1))

    def reverse(self, x, mask, condition):
        return (x - self.translate) * torch.exp(-self.log_scale) * mask


def inverse_spline(x, widths, heights, derivatives, tail, min_width=1e-3, min_height=1e-3, min_derivative=1e-3):
    """transformers' _unconstrained_rational_quadratic_spline(reverse=True): the inverse of a monotonic
    rational-quadratic spline on [−tail, tail], the identity outside. Written with `where` and concatenation
    instead of masked in-place writes, which tracing cannot export; the arithmetic is the same."""
    bins = widths.shape[-1]
    inside = (x >= -tail) & (x <= tail)
    xc = x.clamp(-tail, tail)
    edge = torch.ones_like(derivatives[..., :1]) * math.log(math.exp(1 - min_derivative) - 1)
    derivatives = min_derivative + F.softplus(torch.cat([edge, derivatives, edge], dim=-1))

    def knots(unnormalized, minimum):
        sizes = minimum + (1 - minimum * bins) * torch.softmax(unnormalized, dim=-1)
        inner = (2 * tail * torch.cumsum(sizes, dim=-1) - tail)[..., :-1]
        ends = torch.ones_like(inner[..., :1]) * tail
        cumulative = torch.cat([-ends, inner, ends], dim=-1)
        return cumulative, cumulative[..., 1:] - cumulative[..., :-1]

    cumwidths, widths = knots(widths, min_width)
    cumheights, heights = knots(heights, min_height)
    locations = torch.cat([cumheights[..., :-1], cumheights[..., -1:] + 1e-6], dim=-1)
    index = (torch.sum((xc[..., None] >= locations).long(), dim=-1) - 1).clamp(0, bins - 1)[..., None]
    pick = lambda t: torch.gather(t, -1, index)[..., 0]
    delta = heights / widths
    input_delta, input_height = pick(delta), pick(heights)
    d0, d1 = pick(derivatives[..., :-1]), pick(derivatives[..., 1:])
    shifted = xc - pick(cumheights)
    slope_sum = (d0 + d1 - 2 * input_delta) * shifted
    a = input_height * (input_delta - d0) + slope_sum
    b = input_height * d0 - slope_sum
    c = -input_delta * shifted
    # The discriminant is ≥ 0 for a monotonic spline; the clamp only absorbs rounding.
    root = (2 * c) / (-b - torch.sqrt((b * b - 4 * a * c).clamp(min=0)))
    return torch.where(inside, root * pick(widths) + pick(cumwidths), x)


class ConvFlow(nn.Module):
    """VitsConvFlow: one channel conditions a rational-quadratic spline of the other."""

    def __init__(self, filters: int, kernel: int, layers: int, bins: int, tail: float):
        super().__init__()
        self.filters, self.bins, self.tail = filters, bins, tail
        self.conv_pre = nn.Conv1d(1, filters, 1)
        self.conv_dds = DDSConv(filters, kernel, layers)
        self.conv_proj = nn.Conv1d(filters, 3 * bins - 1, 1)

    def reverse(self, x, mask, condition):
        first, second = x[:, :1], x[:, 1:]
        h = self.conv_proj(self.conv_dds(self.conv_pre(first), mask, condition)) * mask
        h = h.reshape(first.shape[0], 1, -1, first.shape[2]).permute(0, 1, 3, 2)  # [B, 1, T, 3·bins − 1]
        scale = math.sqrt(self.filters)
        widths, heights, derivatives = h[..., : self.bins] / scale, h[..., self.bins : 2 * self.bins] / scale, h[..., 2 * self.bins :]
        return torch.cat([first, inverse_spline(second, widths, heights, derivatives, self.tail)], dim=1) * mask


class StochasticDurationPredictor(nn.Module):
    def __init__(self, hidden: int, kernel: int, layers: int, flows: int, bins: int, tail: float):
        super().__init__()
        self.conv_pre = nn.Conv1d(hidden, hidden, 1)
        self.conv_proj = nn.Conv1d(hidden, hidden, 1)
        self.conv_dds = DDSConv(hidden, kernel, layers)
        self.flows = nn.ModuleList([ElementwiseAffine(2)] + [ConvFlow(hidden, kernel, layers, bins, tail) for _ in range(flows)])
        # Training only (they model the posterior of the durations); part of the checkpoint.
        self.post_conv_pre = nn.Conv1d(1, hidden, 1)
        self.post_conv_proj = nn.Conv1d(hidden, hidden, 1)
        self.post_conv_dds = DDSConv(hidden, kernel, layers)
        self.post_flows = nn.ModuleList([ElementwiseAffine(2)] + [ConvFlow(hidden, kernel, layers, bins, tail) for _ in range(flows)])

    def reverse(self, x, mask, noise_scale: float):
        """x: the text encoder's states [B, hidden, T]; mask [B, 1, T]. Returns log durations [B, 1, T]."""
        condition = self.conv_proj(self.conv_dds(self.conv_pre(x), mask)) * mask
        flows = list(reversed(self.flows))
        flows = flows[:-2] + [flows[-1]]  # as transformers: the last spline flow is skipped at inference
        latents = torch.randn_like(condition[:, :2]) * noise_scale
        for flow in flows:
            latents = flow.reverse(torch.flip(latents, [1]), mask, condition)
        return latents[:, :1]
