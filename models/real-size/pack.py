"""Writes the real-size model pack (random weights in the real architectures and export layouts).

Run through `npm run models:real-size` (models/real-size/generate.ts), which installs Debian's python3-torch
and python3-onnx when missing, writes the tokenizer sidecars and the manifest, and loads every model in
Kuma. By hand: `/usr/bin/python3 models/real-size/pack.py --out DIR [--only a,b] [--seed N]`.

Each model is written into DIR/<name>/ through a staging folder and stamped when complete, so an
interrupted run never leaves a half-written model that looks whole; a stamped model is skipped next time.
"""
import argparse
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from export_util import seed_everything, write_json  # noqa: E402

STAMP = ".complete.json"


def builders():
    import quartznet_ctc
    import wav2vec2_ctc

    table = {
        "wav2vec2-base": lambda out: wav2vec2_ctc.build("wav2vec2-base", out),
        "xls-r-300m": lambda out: wav2vec2_ctc.build("xls-r-300m", out),
        "quartznet15x5": quartznet_ctc.build,
    }
    for optional in ("nllb_600m", "mms_tts_vits", "fastconformer_ctc"):
        try:
            module = __import__(optional)
        except ImportError:
            continue
        table.update(module.BUILDERS)
    return table


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    table = builders()
    names = [n for n in args.only.split(",") if n] or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(table)}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    for index, name in enumerate(names):
        target = os.path.join(args.out, name)
        if not args.force and os.path.exists(os.path.join(target, STAMP)):
            print(f"{name}: present", flush=True)
            continue
        staging = f"{target}.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        started = time.time()
        # One seed per model (not one stream for the pack), so building a subset gives the same weights.
        seed_everything(args.seed + sum(ord(c) for c in name))
        try:
            info = table[name](staging)
            info.update({"name": name, "seed": args.seed, "torch": torch.__version__, "seconds": round(time.time() - started, 1)})
            write_json(os.path.join(staging, STAMP), info)
            shutil.rmtree(target, ignore_errors=True)
            os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        print(json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
