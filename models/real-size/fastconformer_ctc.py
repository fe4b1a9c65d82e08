"""FastConformer hybrid TDT-CTC at the size of RobotsMali's soloni (≈ 114 M parameters), written from NeMo's
published architecture (ConformerEncoder with the fast-conformer configuration, ConvASRDecoder, and the TDT
prediction/joint networks of the hybrid), exported through its CTC head in the `ctc-nemo` layout:
`audio_signal [B,80,T]` + `length [B]` → `logprobs [B,T/8,V+1]` (blank last), `tokens.txt`, `model_config.json`.

Encoder: dw_striding subsampling ×8 (a 3×3 stride-2 conv to 256 channels, then two depthwise-separable 3×3
stride-2 convs, a linear 256·10 → 512), x·sqrt(512), relative sinusoidal positions (max length 5000); 17
conformer layers of d 512: half-step FFN (2048, Swish), relative-position multi-head attention (8 heads,
linear_pos, pos_bias_u/v, rel_shift), convolution module (pointwise ×2 + GLU, depthwise kernel 9, batch norm,
Swish, pointwise), half-step FFN, layer norm. The TDT decoder (embedding + 1-layer LSTM 640) and joint
(640, 5 durations) are built for the parameter count only: the CTC export never runs them.
"""
import math

import torch
from torch import nn

from export_util import BAMBARA_LETTERS, count_parameters, export_nemo_ctc

D, LAYERS, HEADS, FFN, KERNEL, N_MELS, SUB_CHANNELS, POS_MAX = 512, 17, 8, 2048, 9, 80, 256, 5000
PRED_HIDDEN, TDT_DURATIONS = 640, 5
# ≈ 114 M: the size in the name of RobotsMali's soloni-114m-tdt-ctc (NeMo FastConformer large, hybrid TDT-CTC).
PUBLISHED_PARAMS = 114_000_000


def sentencepiece_vocabulary(size: int = 1024) -> list:
    """A SentencePiece-style vocabulary of `size` pieces (NeMo's FastConformer BPE default size): `<unk>`,
    `▁`, letters alone and word-initial, then letter pairs. Random weights make the choice moot; the size
    sets the CTC head, and `▁` pieces exercise Kuma's SentencePiece word joining."""
    letters = [c for c in BAMBARA_LETTERS if c.isalpha()]
    pieces = ["<unk>", "▁"] + letters + ["▁" + c for c in letters]
    for a in letters:
        for b in letters:
            pieces += ["▁" + a + b, a + b]
    return pieces[:size]


class RelPositionalEncoding(nn.Module):
    def __init__(self):
        super().__init__()
        positions = torch.arange(POS_MAX - 1, -POS_MAX, -1, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * -(math.log(10000.0) / D))
        pe = torch.zeros(positions.shape[0], D)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(positions * div), torch.cos(positions * div)
        self.register_buffer("pe", pe[None])

    def forward(self, x):  # positions T−1 … −(T−1) around the centre of the table
        center = self.pe.shape[1] // 2 + 1
        return x * math.sqrt(D), self.pe[:, center - x.shape[1] : center + x.shape[1] - 1]


class RelPositionAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.d_k = D // HEADS
        self.linear_q, self.linear_k, self.linear_v, self.linear_out = (nn.Linear(D, D) for _ in range(4))
        self.linear_pos = nn.Linear(D, D, bias=False)
        self.pos_bias_u = nn.Parameter(torch.zeros(HEADS, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.zeros(HEADS, self.d_k))

    def forward(self, x, pos_emb, mask):  # mask [B, T, T] true where attention is not allowed
        b = x.shape[0]
        q = self.linear_q(x).view(b, -1, HEADS, self.d_k)
        k = self.linear_k(x).view(b, -1, HEADS, self.d_k).transpose(1, 2)
        v = self.linear_v(x).view(b, -1, HEADS, self.d_k).transpose(1, 2)
        p = self.linear_pos(pos_emb).view(1, -1, HEADS, self.d_k).transpose(1, 2)
        ac = (q + self.pos_bias_u).transpose(1, 2) @ k.transpose(-2, -1)
        bd = self.rel_shift((q + self.pos_bias_v).transpose(1, 2) @ p.transpose(-2, -1))[..., : ac.shape[-1]]
        scores = ((ac + bd) / math.sqrt(self.d_k)).masked_fill(mask[:, None], -10000.0)
        attn = torch.softmax(scores, dim=-1).masked_fill(mask[:, None], 0.0)
        out = (attn @ v).transpose(1, 2).reshape(b, -1, D)
        return self.linear_out(out)

    @staticmethod
    def rel_shift(x):  # [B, H, T, 2T−1]: column j of row i becomes relative position j − i
        b, h, t, n = x.shape
        x = nn.functional.pad(x, (1, 0)).view(b, h, -1, t)
        return x[:, :, 1:].reshape(b, h, t, n)


class FeedForward(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Linear(D, FFN), nn.SiLU(), nn.Linear(FFN, D))


class ConvModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1d(D, 2 * D, 1)
        self.depthwise_conv = nn.Conv1d(D, D, KERNEL, padding=KERNEL // 2, groups=D)
        self.batch_norm = nn.BatchNorm1d(D)
        self.pointwise_conv2 = nn.Conv1d(D, D, 1)

    def forward(self, x, pad_mask):  # x [B, T, D]; pad_mask [B, T] true on padding
        x = nn.functional.glu(self.pointwise_conv1(x.transpose(1, 2)), dim=1)
        x = self.depthwise_conv(x.masked_fill(pad_mask[:, None, :], 0.0))
        return self.pointwise_conv2(nn.functional.silu(self.batch_norm(x))).transpose(1, 2)


class ConformerLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_feed_forward1, self.feed_forward1 = nn.LayerNorm(D), FeedForward()
        self.norm_self_att, self.self_attn = nn.LayerNorm(D), RelPositionAttention()
        self.norm_conv, self.conv = nn.LayerNorm(D), ConvModule()
        self.norm_feed_forward2, self.feed_forward2 = nn.LayerNorm(D), FeedForward()
        self.norm_out = nn.LayerNorm(D)

    def forward(self, x, pos_emb, att_mask, pad_mask):
        x = x + 0.5 * self.feed_forward1(self.norm_feed_forward1(x))
        x = x + self.self_attn(self.norm_self_att(x), pos_emb, att_mask)
        x = x + self.conv(self.norm_conv(x), pad_mask)
        x = x + 0.5 * self.feed_forward2(self.norm_feed_forward2(x))
        return self.norm_out(x)


class DwStridingSubsampling(nn.Module):
    def __init__(self):
        super().__init__()
        c = SUB_CHANNELS
        self.conv = nn.Sequential(
            nn.Conv2d(1, c, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(c, c, 3, 2, 1, groups=c), nn.Conv2d(c, c, 1), nn.ReLU(),
            nn.Conv2d(c, c, 3, 2, 1, groups=c), nn.Conv2d(c, c, 1), nn.ReLU(),
        )
        self.out = nn.Linear(c * (N_MELS // 8), D)

    def forward(self, x, lengths):  # x [B, T, mels]
        x = self.conv(x[:, None])
        x = self.out(x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1))
        for _ in range(3):  # NeMo's calc_length: floor((L + 2·1 − 3) / 2) + 1 per stride-2 conv
            lengths = torch.floor((lengths.float() - 1.0) / 2.0) + 1.0
        return x, lengths.long()


class FastConformerCtc(nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.pre_encode = DwStridingSubsampling()
        self.pos_enc = RelPositionalEncoding()
        self.layers = nn.ModuleList(ConformerLayer() for _ in range(LAYERS))
        self.ctc_decoder = nn.Conv1d(D, vocab + 1, 1)
        # The TDT half of the hybrid checkpoint (prediction network and joint), counted, not exported.
        self.tdt_prediction = nn.ModuleDict({"embed": nn.Embedding(vocab + 1, PRED_HIDDEN), "lstm": nn.LSTM(PRED_HIDDEN, PRED_HIDDEN)})
        self.tdt_joint = nn.ModuleDict({
            "enc": nn.Linear(D, PRED_HIDDEN), "pred": nn.Linear(PRED_HIDDEN, PRED_HIDDEN), "joint_net": nn.Linear(PRED_HIDDEN, vocab + 1 + TDT_DURATIONS),
        })
        # Batch-norm statistics of a trained model are not 0/1: random ones keep activations varied.
        for m in self.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)

    def forward(self, audio_signal, length):
        x, lengths = self.pre_encode(audio_signal.transpose(1, 2), length)
        x, pos_emb = self.pos_enc(x)
        valid = torch.arange(x.shape[1])[None, :] < lengths[:, None]  # [B, T']
        att_mask = ~(valid[:, :, None] & valid[:, None, :])
        for layer in self.layers:
            x = layer(x, pos_emb, att_mask, ~valid)
        return torch.log_softmax(self.ctc_decoder(x.transpose(1, 2)).transpose(1, 2), dim=-1)


def build(out_dir: str) -> dict:
    tokens = sentencepiece_vocabulary()
    model = FastConformerCtc(len(tokens))
    params = count_parameters(model)
    model.eval()
    preprocessor = {"normalize": "per_feature", "window_size": 0.025, "pad_to": 0}
    encoder = {
        "_target_": "nemo.collections.asr.modules.ConformerEncoder", "feat_in": N_MELS, "n_layers": LAYERS,
        "d_model": D, "subsampling": "dw_striding", "subsampling_factor": 8, "subsampling_conv_channels": SUB_CHANNELS,
        "ff_expansion_factor": FFN // D, "self_attention_model": "rel_pos", "n_heads": HEADS, "xscaling": True,
        "pos_emb_max_len": POS_MAX, "conv_kernel_size": KERNEL, "conv_norm_type": "batch_norm",
    }
    export_nemo_ctc(model, N_MELS, 801, out_dir, tokens, preprocessor, encoder, {"tokenizer": {"type": "bpe"}})
    return {"params": params, "published_params": PUBLISHED_PARAMS, "engine": "ctc-nemo"}


BUILDERS = {"fastconformer-ctc": build}
