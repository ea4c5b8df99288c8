#!/usr/bin/env python3
"""The Python side of loom-bench's compile.* rows: each case as a PyTorch user writes it, timed
eagerly and under torch.compile (Inductor), so that Loom's compiled code is measured against
the best the newest PyTorch does with the same work.

Cases (bench/compile_bench.cpp has Loom's side of each, same shapes and float32):
  pointwise          gelu(x * w + b) + r, x and r [2048, 2048], w and b [2048], no grad
  pointwise_train    the same with x, w, b requiring grad: forward, backward with a dense
                     output gradient, gradients reset to None
  softmax            softmax over the last dim of [4096, 1024], no grad
  layer_norm         layer norm over the last dim of [4096, 1024] with weight and bias, eps 1e-5
  softmax_train, layer_norm_train
                     the same with x (and w, b) requiring grad, forward then backward
  transformer_train  nn.TransformerEncoderLayer(256, 4, batch_first=True) with PyTorch's
                     defaults (feed-forward 2048, dropout 0.1, relu, post-norm) in training
                     mode, x [16, 128, 256] requiring grad: forward, backward with a dense
                     output gradient, every gradient reset to None

Configurations (--configs, comma-separated, or "all"):
  eager              eager mode; softmax and layer norm through PyTorch's own fused ops
                     (F.softmax, F.layer_norm)
  compile            torch.compile (default mode) of the eager form
  compile_written    torch.compile of softmax and layer norm written out of reductions and
                     pointwise ops, as Loom's side writes them (softmax and layer norm only)

Compiling happens before timing (its seconds are reported, not timed: Inductor's on-disk
cache makes a second process's compile shorter). Each configuration is timed in --samples
samples of about --sample-ms each; the report gives the median milliseconds per call.

Writes a JSON report: {"torch": version, "threads": N, "case": name,
  "configs": {name: {"ms", "compile_seconds"?}}, "skipped": {name: why}, "best": name}.

Usage: compile_peer.py --case NAME --threads N --report FILE [--configs LIST] [--samples K]
"""

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

CASES = ("pointwise", "pointwise_train", "softmax", "layer_norm", "softmax_train",
         "layer_norm_train", "transformer_train")
ALL_CONFIGS = ("eager", "compile", "compile_written")


def chain(x, w, b, r):
    return F.gelu(x * w + b) + r


def softmax_ops(x, w, b):
    return F.softmax(x, dim=-1)


def softmax_written(x, w, b):
    e = torch.exp(x - torch.amax(x, dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def layer_norm_ops(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def layer_norm_written(x, w, b):
    centered = x - x.mean(dim=-1, keepdim=True)
    var = (centered * centered).mean(dim=-1, keepdim=True)
    return centered * torch.rsqrt(var + 1e-5) * w + b


def make_case(case, config):
    """Returns (fn, inputs, train, gout, params): fn(*inputs) is the case's forward; params
    have gradients too (reset with the inputs')."""
    train = case.endswith("_train")
    base = case[: -len("_train")] if train else case
    if base == "transformer":
        if config == "compile_written":
            return None
        layer = torch.nn.TransformerEncoderLayer(256, 4, batch_first=True)
        layer.train()
        x = torch.randn(16, 128, 256, requires_grad=True)
        return layer, [x], True, torch.randn(16, 128, 256), list(layer.parameters())
    if base == "pointwise":
        if config == "compile_written":
            return None
        fn = chain
        inputs = [torch.rand(2048, 2048), torch.rand(2048), torch.rand(2048),
                  torch.rand(2048, 2048)]
        grads = 3
        gout = torch.rand(2048, 2048)
    else:
        written = {"softmax": softmax_written, "layer_norm": layer_norm_written}[base]
        ops = {"softmax": softmax_ops, "layer_norm": layer_norm_ops}[base]
        fn = written if config == "compile_written" else ops
        inputs = [torch.randn(4096, 1024), torch.rand(1024), torch.rand(1024)]
        grads = 3
        gout = torch.randn(4096, 1024)
    if train:
        for t in inputs[:grads]:
            t.requires_grad_(True)
    return fn, inputs, train, gout, []


def step_of(fn, inputs, train, gout, params):
    if train:
        def step():
            fn(*inputs).backward(gout)
            for t in inputs + params:
                t.grad = None
        return step

    def step():
        with torch.no_grad():
            fn(*inputs)
    return step


def time_step(step, samples, sample_ms):
    step()
    t0 = time.perf_counter()
    step()
    once = max(time.perf_counter() - t0, 1e-6)
    calls = max(1, int(sample_ms / 1000.0 / once))
    results = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(calls):
            step()
        results.append((time.perf_counter() - t0) / calls * 1000.0)
    return statistics.median(results)


def run(case, config, samples, sample_ms):
    made = make_case(case, config)
    if made is None:
        return None
    fn, inputs, train, gout, params = made
    result = {}
    if config.startswith("compile"):
        fn = torch.compile(fn)
        t0 = time.perf_counter()
        step_of(fn, inputs, train, gout, params)()
        result["compile_seconds"] = time.perf_counter() - t0
    result["ms"] = time_step(step_of(fn, inputs, train, gout, params), samples, sample_ms)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--report", required=True)
    parser.add_argument("--configs", default="all")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--sample-ms", type=float, default=50.0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    configs = ALL_CONFIGS if args.configs == "all" else tuple(args.configs.split(","))
    report = {"torch": torch.__version__, "threads": torch.get_num_threads(), "case": args.case,
              "configs": {}, "skipped": {}}
    for c in configs:
        try:
            r = run(args.case, c, args.samples, args.sample_ms)
        except Exception as e:  # torch.compile can fail (no compiler, an Inductor bug)
            why = f"{type(e).__name__}: {e}".strip()
            report["skipped"][c] = "failed here: " + why[:300]
            continue
        if r is not None:
            report["configs"][c] = r
    if report["configs"]:
        report["best"] = min(report["configs"], key=lambda c: report["configs"][c]["ms"])
    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)
    return 0 if report["configs"] else 1


if __name__ == "__main__":
    sys.exit(main())
