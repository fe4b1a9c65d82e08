"""QuartzNet 15×5 CTC at real size (NeMo's quartznet_15x5.yaml; RobotsMali's stt-bm-quartznet15x5 is this
shape, ≈ 19 M parameters), exported in the `ctc-nemo` layout: `audio_signal [B,64,T]` + `length [B]` →
`logprobs [B,T/2,V+1]` (blank last), with `tokens.txt` and `model_config.json`.

Encoder: C1 (separable, kernel 33, stride 2, 256 channels), 15 blocks B1–B5 (3 each) of 5 time-channel
separable sub-blocks (depthwise conv → pointwise conv → batch norm → ReLU) with a pointwise+BN residual into
each block's last sub-block, kernels 33/39/51/63/75 and channels 256/256/512/512/512, then C2 (separable,
kernel 87, dilation 2, 512), C3 (pointwise, 1024) and the 1×1 conv decoder. NeMo's export turns masked
convolutions off; this graph multiplies the features by the `length` mask once at the input, as NeMo's
preprocessor zeroes padding frames.

The preprocessor says `normalize: NA`, as NeMo's streaming (cache-aware / buffered) configs do: per_feature
normalisation divides every frame by statistics of the whole utterance, which no streaming front end knows
before the end, so with NA Kuma streams this model statefully with exact frames (src/engines/asr/ctc-stream.ts)
and with per_feature it falls back to windowed chunks. A real checkpoint trained with per_feature keeps the
windowed path; one trained (or fine-tuned) on NA features streams exactly.
"""

import torch
from torch import nn

from export_util import CTC_TOKENS, count_parameters, export_nemo_ctc

BLOCKS = [(256, 33), (256, 39), (512, 51), (512, 63), (512, 75)]
REPEAT = 5
BLOCKS_PER_GROUP = 3
N_MELS = 64
PUBLISHED_PARAMS = 18_900_000  # NeMo's QuartzNet15x5Base-En model card: 18.9 M


class SubBlock(nn.Module):
    """A time-channel separable convolution with batch norm (activation applied by the caller)."""

    def __init__(self, c_in, c_out, kernel, stride=1, dilation=1, separable=True):
        super().__init__()
        pad = (kernel // 2) * dilation
        if separable:
            self.depthwise = nn.Conv1d(c_in, c_in, kernel, stride, pad, dilation, groups=c_in, bias=False)
            self.pointwise = nn.Conv1d(c_in, c_out, 1, bias=False)
        else:
            self.depthwise = None
            self.pointwise = nn.Conv1d(c_in, c_out, kernel, stride, pad, dilation, bias=False)
        self.norm = nn.BatchNorm1d(c_out, eps=1e-3)

    def forward(self, x):
        if self.depthwise is not None:
            x = self.depthwise(x)
        return self.norm(self.pointwise(x))


class JasperBlock(nn.Module):
    def __init__(self, c_in, c_out, kernel):
        super().__init__()
        self.subs = nn.ModuleList(SubBlock(c_in if i == 0 else c_out, c_out, kernel) for i in range(REPEAT))
        self.residual = nn.Sequential(nn.Conv1d(c_in, c_out, 1, bias=False), nn.BatchNorm1d(c_out, eps=1e-3))

    def forward(self, x):
        h = x
        for i, sub in enumerate(self.subs):
            h = sub(h)
            if i < REPEAT - 1:
                h = torch.relu(h)
        return torch.relu(h + self.residual(x))


class QuartzNet(nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.c1 = SubBlock(N_MELS, 256, 33, stride=2)
        blocks = []
        c_in = 256
        for c_out, kernel in BLOCKS:
            for _ in range(BLOCKS_PER_GROUP):
                blocks.append(JasperBlock(c_in, c_out, kernel))
                c_in = c_out
        self.blocks = nn.ModuleList(blocks)
        self.c2 = SubBlock(512, 512, 87, dilation=2)
        self.c3 = SubBlock(512, 1024, 1, separable=False)
        self.decoder = nn.Conv1d(1024, vocab + 1, 1)
        # Batch-norm statistics of a trained model are not 0/1: random ones keep activations varied.
        for m in self.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)

    def forward(self, audio_signal, length):
        frames = audio_signal.shape[2]
        mask = (torch.arange(frames, device=audio_signal.device)[None, :] < length[:, None]).to(audio_signal.dtype)
        h = torch.relu(self.c1(audio_signal * mask[:, None, :]))
        for block in self.blocks:
            h = block(h)
        h = torch.relu(self.c2(h))
        h = torch.relu(self.c3(h))
        return torch.log_softmax(self.decoder(h).transpose(1, 2), dim=-1)


def build(out_dir: str) -> dict:
    # NeMo's vocabulary has no blank and no [PAD]/[UNK]: the blank is the extra last class.
    tokens = [" " if t == "|" else t for t in CTC_TOKENS if t not in ("[UNK]", "[PAD]")]
    model = QuartzNet(len(tokens))
    params = count_parameters(model)
    # normalize NA: NeMo's streaming configs use it (per-utterance statistics cannot be known while a turn is
    # spoken), and it lets Kuma stream the conv state exactly (src/engines/onnx/conv-streaming.ts).
    preprocessor = {"normalize": "NA", "window_size": 0.02, "pad_to": 16}
    encoder = {"_target_": "nemo.collections.asr.modules.ConvASREncoder", "feat_in": N_MELS, "subsampling_factor": 2}
    export_nemo_ctc(model, N_MELS, 400, out_dir, tokens, preprocessor, encoder)
    return {"params": params, "published_params": PUBLISHED_PARAMS, "engine": "ctc-nemo"}
