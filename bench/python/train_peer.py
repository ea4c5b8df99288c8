#!/usr/bin/env python3
"""The Python side of loom-bench's train.* rows: `loom train`'s job written as PyTorch users
write it, timed in several configurations.

The job is the one `loom train --epochs 1` runs (tools/train) and bench-<peer>-train runs in
C++ (bench/libtorch/train_main.cpp): Fashion-MNIST from the gzip IDX files, pixels / 255 then
normalised with mean 0.2860 and std 0.3530, the MLP 784-256-10 or the CNN (conv 1->32 3x3,
relu, max pool 2, conv 32->64 3x3, relu, max pool 2, flatten, linear 1600->128, relu, linear
128->10), cross entropy, Adam lr 1e-3, batch 64 (the last, partial batch included), a new
shuffled order per epoch, the batches gathered from in-memory tensors. Like `loom train`, each
step reads the loss and the number of correct predictions back (loss.item(), .sum().item()).

Configurations (--configs, comma-separated, or "all"):
  eager           eager mode, NCHW
  channels_last   eager mode, model and batches in channels_last (CNN only)
  compile         torch.compile(model) (default mode), NCHW. Compiling happens before the timed
                  epoch (a few steps at batch 64 and at the last batch's size, then the model and
                  the optimizer start afresh); its time is reported as compile_seconds, not
                  counted in epoch_seconds. Where compiling fails, the reason is reported under
                  "skipped" and the configuration is left out.
Every configuration uses torch.optim.Adam with fused=True (one CPU kernel for all parameters,
the fastest Adam PyTorch has) where this PyTorch accepts it, else its default.

Writes a JSON report: {"torch": version, "threads": N,
  "configs": {name: {"epoch_seconds", "compile_seconds"?, "test_accuracy", "peak_rss_mib",
  "optimizer"}}, "skipped": {name: why}, "best": name of the fastest}.

Usage: train_peer.py --model cnn|mlp --threads N --data DIR --report FILE [--configs LIST]
"""

import argparse
import gzip
import json
import resource
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ALL_CONFIGS = ("eager", "channels_last", "compile")
BATCH = 64


def read_images(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    _, n, h, w = struct.unpack(">IIII", data[:16])
    t = torch.frombuffer(bytearray(data[16:]), dtype=torch.uint8).view(n, 1, h, w)
    return ((t.to(torch.float32) / 255.0) - 0.2860) / 0.3530


def read_labels(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    return torch.frombuffer(bytearray(data[8:]), dtype=torch.uint8).to(torch.int64)


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def make_adam(params):
    """The fastest Adam: fused=True where this PyTorch has it for the CPU."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=1e-3, fused=True), "Adam(fused=True)"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(params, lr=1e-3), "Adam(default)"


def train_step(model, opt, xb, yb):
    logits = model(xb)
    loss = F.cross_entropy(logits, yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item() * xb.shape[0], (logits.argmax(1) == yb).sum().item()


def run_config(config, args, x, y, tx, ty):
    torch.manual_seed(0)
    model = make_model(args.model)
    fmt = torch.channels_last if config == "channels_last" else torch.contiguous_format
    if config == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    step_model = model
    result = {}
    if config == "compile":
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        step_model = torch.compile(model)
        opt, _ = make_adam(model.parameters())
        t0 = time.perf_counter()
        last = x.shape[0] % BATCH or BATCH
        for size in (BATCH, BATCH, last, last):
            train_step(step_model, opt, x[:size], y[:size])
        result["compile_seconds"] = time.perf_counter() - t0
        with torch.no_grad():
            model.load_state_dict(initial)
    opt, opt_name = make_adam(model.parameters())
    result["optimizer"] = opt_name

    n = x.shape[0]
    t0 = time.perf_counter()
    order = torch.randperm(n)
    loss_sum, correct = 0.0, 0
    for s in range(0, n, BATCH):
        idx = order[s:s + BATCH]
        xb = x.index_select(0, idx)
        if config == "channels_last":
            xb = xb.contiguous(memory_format=fmt)
        l, c = train_step(step_model, opt, xb, y.index_select(0, idx))
        loss_sum += l
        correct += c
    result["epoch_seconds"] = time.perf_counter() - t0
    result["train_loss"] = loss_sum / n
    with torch.no_grad():
        model.eval()
        txb = tx[:1000].contiguous(memory_format=fmt)
        result["test_accuracy"] = (model(txb).argmax(1) == ty[:1000]).float().mean().item()
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--configs", default="all")
    p.add_argument("--report", required=True)
    args = p.parse_args()
    configs = ALL_CONFIGS if args.configs == "all" else tuple(args.configs.split(","))
    for c in configs:
        if c not in ALL_CONFIGS:
            p.error(f"unknown configuration '{c}' (known: {', '.join(ALL_CONFIGS)})")
    torch.set_num_threads(args.threads)

    x = read_images(f"{args.data}/train-images-idx3-ubyte.gz")
    y = read_labels(f"{args.data}/train-labels-idx1-ubyte.gz")
    tx = read_images(f"{args.data}/t10k-images-idx3-ubyte.gz")
    ty = read_labels(f"{args.data}/t10k-labels-idx1-ubyte.gz")

    report = {"torch": torch.__version__, "threads": args.threads, "model": args.model,
              "configs": {}, "skipped": {}}
    for c in configs:
        if c == "channels_last" and args.model == "mlp":
            report["skipped"][c] = "the MLP has no convolution (channels_last changes nothing)"
            continue
        try:
            r = run_config(c, args, x, y, tx, ty)
        except Exception as e:  # noqa: BLE001 - a configuration that fails here is reported
            if c != "compile":
                raise
            why = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            report["skipped"][c] = "torch.compile failed here: " + why[:300]
            continue
        report["configs"][c] = r
        extra = f", compiled in {r['compile_seconds']:.1f} s" if "compile_seconds" in r else ""
        print(f"{args.model} {c}: {r['epoch_seconds']:.3f} s per epoch ({r['optimizer']}, "
              f"test accuracy {r['test_accuracy']:.3f}{extra})", flush=True)
    for c, why in report["skipped"].items():
        print(f"{args.model} {c}: skipped: {why}", flush=True)
    if report["configs"]:
        report["best"] = min(report["configs"], key=lambda k: report["configs"][k]["epoch_seconds"])
        print(f"{args.model} fastest: {report['best']}", flush=True)
    with open(args.report, "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
