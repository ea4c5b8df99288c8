"""Reads Loom's event files with TensorBoard's own reader and compares the values.

usage: tensorboard_reader_check.py writer RUN_DIR
         the run of tests/plugins/utils/tensorboard_writer.cpp: every kind of summary
       tensorboard_reader_check.py train RUN_DIR
         the --tensorboard folder of `loom train`: its per-step and per-epoch scalars against
         the run's steps.csv and metrics.csv

TensorBoard's EventAccumulator reads the records through its TFRecord reader, which checks
both masked CRC32Cs of every record, so a framing error fails here too.
"""
import csv
import io
import math
import os
import sys

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams import api_pb2
from tensorboard.util import tensor_util

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def as_float32(x):
    """x rounded to float32, as TensorBoard stores a scalar."""
    import struct

    return struct.unpack("f", struct.pack("f", x))[0]


def load(path):
    acc = ea.EventAccumulator(path, size_guidance={k: 0 for k in ea.DEFAULT_SIZE_GUIDANCE})
    acc.Reload()
    return acc


def scalars(acc, tag):
    return [(e.step, e.value, e.wall_time) for e in acc.Scalars(tag)]


def check_writer(run):
    acc = load(run)
    tags = acc.Tags()
    print("tags:", {k: v for k, v in tags.items() if v})
    check(acc.file_version == 2.0, "file_version %r" % acc.file_version)
    check(sorted(tags["scalars"]) == ["hparam/accuracy", "train/loss", "train/lr"],
          "scalar tags %s" % tags["scalars"])
    # Steps 15 to 19 come from the second file (purge_step 15), which purged the first's.
    loss = scalars(acc, "train/loss")
    check([s for s, _, _ in loss] == list(range(20)), "train/loss steps %s" % [s for s, _, _ in loss])
    for step, value, wall in loss:
        resumed = step >= 15
        want = (2.0 if resumed else 1.0) / (step + 1)
        check(value == as_float32(want), "train/loss at %d: %r" % (step, value))
        check(wall == (1700000100.0 if resumed else 1700000000.0) + step,
              "train/loss wall_time at %d: %r" % (step, wall))
    lr = scalars(acc, "train/lr")
    check([s for s, _, _ in lr] == list(range(15)), "train/lr steps %s" % [s for s, _, _ in lr])
    for step, value, _ in lr:
        check(value == as_float32(0.001 * 0.5 ** (step / 10.0)), "train/lr at %d" % step)
    # add_scalars: one run folder per key, the main tag in each.
    for key, sign in (("a", 1), ("b", -1)):
        sub = load(os.path.join(run, "cmp_" + key))
        got = [(s, v) for s, v, _ in scalars(sub, "cmp")]
        check(got == [(s, float(sign * s)) for s in range(20)], "cmp_%s: %s" % (key, got[:3]))

    # Histogram of 0.0, 0.1, ..., 9.9 (float32) in 10 equal buckets.
    (h,) = acc.Histograms("weights")
    hv = h.histogram_value
    values = [as_float32(i / 10.0) for i in range(100)]
    check(h.step == 3, "histogram step %d" % h.step)
    check(hv.min == values[0] and hv.max == values[-1], "histogram min/max %r %r" % (hv.min, hv.max))
    check(hv.num == 100, "histogram num %r" % hv.num)
    check(math.isclose(hv.sum, sum(values), rel_tol=1e-12), "histogram sum %r" % hv.sum)
    check(math.isclose(hv.sum_squares, sum(v * v for v in values), rel_tol=1e-12),
          "histogram sum_squares %r" % hv.sum_squares)
    check(len(hv.bucket) == 10 and sum(hv.bucket) == 100, "histogram buckets %s" % list(hv.bucket))
    check(hv.bucket_limit[-1] == hv.max, "last bucket limit %r" % hv.bucket_limit[-1])
    width = (values[-1] - values[0]) / 10
    expected = [0] * 10
    for v in values:
        expected[min(int((v - values[0]) / width), 9)] += 1
    check(list(hv.bucket) == expected, "histogram counts %s, expected %s" % (list(hv.bucket), expected))

    # Image: CHW 3x4x5 of i/59, as 8-bit RGB.
    (im,) = acc.Images("img")
    check((im.step, im.width, im.height) == (4, 5, 4), "image step/size %r" % ((im.step, im.width, im.height),))
    from PIL import Image

    pic = Image.open(io.BytesIO(im.encoded_image_string))
    check(pic.mode == "RGB" and pic.size == (5, 4), "PNG mode/size %s %s" % (pic.mode, pic.size))
    for y in range(4):
        for x in range(5):
            want = tuple(int(math.floor((c * 20 + y * 5 + x) / 59.0 * 255.0 + 0.5)) for c in range(3))
            got = pic.getpixel((x, y))
            check(got == want, "pixel (%d, %d): %s, expected %s" % (x, y, got, want))

    # Text: the text plugin's DT_STRING tensor.
    (t,) = acc.Tensors("notes")
    arr = tensor_util.make_ndarray(t.tensor_proto)
    check(t.step == 5 and arr.tolist() == [b"loom **markdown**"], "text %r at %d" % (arr, t.step))
    check(acc.SummaryMetadata("notes").plugin_data.plugin_name == "text", "text plugin name")

    # hparams, parsed by the hparams plugin's own functions.
    content = acc.PluginTagToContent(hp_metadata.PLUGIN_NAME)
    check(sorted(content) == sorted([hp_metadata.EXPERIMENT_TAG, hp_metadata.SESSION_START_INFO_TAG,
                                     hp_metadata.SESSION_END_INFO_TAG]), "hparams tags %s" % sorted(content))
    exp = hp_metadata.parse_experiment_plugin_data(content[hp_metadata.EXPERIMENT_TAG])
    types = {i.name: i.type for i in exp.hparam_infos}
    check(types == {"lr": api_pb2.DATA_TYPE_FLOAT64, "optimizer": api_pb2.DATA_TYPE_STRING,
                    "layers": api_pb2.DATA_TYPE_FLOAT64, "shuffle": api_pb2.DATA_TYPE_BOOL},
          "hparam types %s" % types)
    check([m.name.tag for m in exp.metric_infos] == ["hparam/accuracy"], "metric infos")
    start = hp_metadata.parse_session_start_info_plugin_data(content[hp_metadata.SESSION_START_INFO_TAG])
    hp = start.hparams
    check(hp["lr"].number_value == 0.001 and hp["optimizer"].string_value == "adam"
          and hp["layers"].number_value == 3 and hp["shuffle"].bool_value is True,
          "session hparams %s" % hp)
    end = hp_metadata.parse_session_end_info_plugin_data(content[hp_metadata.SESSION_END_INFO_TAG])
    check(end.status == api_pb2.STATUS_SUCCESS, "session status %s" % end.status)
    (acc_metric,) = scalars(acc, "hparam/accuracy")
    check(acc_metric[1] == as_float32(0.9), "hparam/accuracy %r" % (acc_metric,))


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def check_train(run, run_folder):
    acc = load(run)
    tags = acc.Tags()["scalars"]
    print("scalar tags:", sorted(tags))
    steps = read_csv(os.path.join(run_folder, "steps.csv"))
    check(len(steps) > 0, "steps.csv has rows")
    for tag, column in (("train/loss", "loss"), ("train/lr", "lr")):
        check(len(scalars(acc, tag)) == len(steps), "%s: %d events for %d steps" % (tag, len(scalars(acc, tag)), len(steps)))
        got = {s: v for s, v, _ in scalars(acc, tag)}
        want = {int(r["step"]): as_float32(float(r[column])) for r in steps}
        check(sorted(got) == sorted(want), "%s steps %s vs steps.csv %s" % (tag, sorted(got)[:5], sorted(want)[:5]))
        for s, v in want.items():
            # steps.csv holds 9 significant digits: a float32 to within rounding.
            check(s in got and math.isclose(got[s], v, rel_tol=1e-6),
                  "%s at step %d: %r, steps.csv %r" % (tag, s, got.get(s), v))
    check(len(scalars(acc, "train/samples_per_sec")) == len(steps), "train/samples_per_sec count")
    check(all(v > 0 for _, v, _ in scalars(acc, "train/samples_per_sec")), "samples_per_sec > 0")
    # Per epoch: at the step the epoch ended on (its last row in steps.csv).
    rows = read_csv(os.path.join(run_folder, "metrics.csv"))
    last_step = {}
    for r in steps:
        last_step[int(r["epoch"])] = int(r["step"])
    for column in ("train_loss", "train_accuracy", "test_loss", "test_accuracy", "lr"):
        got = [(s, v) for s, v, _ in scalars(acc, "epoch/" + column)]
        want = [(last_step.get(int(r["epoch"])), as_float32(float(r[column]))) for r in rows]
        check([s for s, _ in got] == [s for s, _ in want], "epoch/%s steps %s, want %s" % (column, got, want))
        for (_, g), (e, w) in zip(got, want):
            # metrics.csv holds 6 significant digits.
            check(math.isclose(g, w, rel_tol=1e-5, abs_tol=1e-6), "epoch/%s at %d: %r vs %r" % (column, e, g, w))
    content = acc.PluginTagToContent(hp_metadata.PLUGIN_NAME)
    check(hp_metadata.SESSION_START_INFO_TAG in content, "hparams session of the run")
    if hp_metadata.SESSION_START_INFO_TAG in content:
        start = hp_metadata.parse_session_start_info_plugin_data(content[hp_metadata.SESSION_START_INFO_TAG])
        check(start.hparams["model"].string_value in ("mlp", "cnn"), "hparams model %s" % start.hparams)


def main():
    mode, run = sys.argv[1], sys.argv[2]
    if mode == "writer":
        check_writer(run)
    elif mode == "train":
        check_train(run, sys.argv[3] if len(sys.argv) > 3 else run)
    else:
        sys.exit("unknown mode " + mode)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        sys.exit(1)
    print("OK: TensorBoard read every value back")


if __name__ == "__main__":
    main()
