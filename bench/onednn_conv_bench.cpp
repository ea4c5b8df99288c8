// conv3x3.*: a 3x3 convolution of a batch of 32, 64 -> 64 channels, 56 x 56, padding 1,
// float32, 2 threads (a ResNet stage), through the dispatcher with the onednn provider
// (plugins/cpu_onednn/convolution.cpp), beside libtorch (bench/libtorch/onednn_conv_peer.cpp)
// and raw oneDNN (the "raw" peer: blocked layouts chosen by oneDNN, format any, for every
// operand, primitives and memory created once: what oneDNN itself reaches on this machine).
//
// conv3x3.fwd is conv2d(x, w, padding 1) on a contiguous (NCHW) input; conv3x3.fwdbwd is that
// plus convolution_backward for the input's and the weight's gradients (the op autograd calls,
// called directly, so no graph is recorded on either side); conv3x3.fwd.channels_last is the
// forward of a channels-last input (the raw side is the same blocked forward throughout).
#include <dnnl.hpp>
#include <memory>
#include <vector>

#include "harness.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"

namespace loom::bench {
namespace {

constexpr int64_t kN = 32, kC = 64, kHW = 56;

/// Loads the packs and the oneDNN plugin, and makes the convolution ops run on it.
void load_onednn() {
  PluginLoader::instance().load("ops_core");
  PluginLoader::instance().load("ops_nn");
  PluginLoader::instance().load("cpu_onednn");
  for (const char* op : {"aten::conv2d", "aten::convolution_backward"}) {
    Dispatcher::instance().set_provider_override(op, DispatchKey::CPU, "onednn");
  }
}

/// Values in [-0.5, 0.5) in a fixed pattern.
void fill_pattern(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
}

Tensor pattern(IntArrayRef sizes) {
  Tensor t = Tensor::empty(sizes);
  fill_pattern(t.data_ptr<float>(), t.numel());
  return t;
}

/// Milliseconds per call of body.
template <typename F>
Side ms_per_call(F body) {
  Side side = ns_per_call(std::move(body));
  return [side]() { return side()[0] / 1e6; };
}

LOOM_BENCH("conv3x3.fwd", unit::ms, .rounds = 9, .max_ratio = 1.0) {
  load_onednn();
  const Tensor x = pattern({kN, kC, kHW, kHW}), w = pattern({kC, kC, 3, 3});
  return ms_per_call([=] { do_not_optimize(conv2d(x, w, std::nullopt, 1, 1)); });
}

LOOM_BENCH("conv3x3.fwdbwd", unit::ms, .rounds = 9, .max_ratio = 1.0) {
  load_onednn();
  const Tensor x = pattern({kN, kC, kHW, kHW}), w = pattern({kC, kC, 3, 3});
  const Tensor go = pattern({kN, kC, kHW, kHW});
  return ms_per_call([=] {
    do_not_optimize(conv2d(x, w, std::nullopt, 1, 1));
    const auto grads = convolution_backward(go, x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1,
                                            {true, true, false});
    do_not_optimize(grads);
  });
}

// The same forward on a channels-last input (the layout oneDNN's fastest kernel reads here):
// no reorder on the Loom side, and a channels-last result.
LOOM_BENCH("conv3x3.fwd.channels_last", unit::ms, .rounds = 9, .max_ratio = 1.0) {
  load_onednn();
  const Tensor x = permute(pattern({kN, kHW, kHW, kC}), {0, 3, 1, 2});
  const Tensor w = pattern({kC, kC, 3, 3});
  return ms_per_call([=] { do_not_optimize(conv2d(x, w, std::nullopt, 1, 1)); });
}

// ---- raw oneDNN ----

using dnnl::memory;

/// Everything the raw side holds: engine, stream, primitives and their memory, made once.
struct Raw {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  memory src, weights, dst;                     // forward, in its layouts
  memory bd_diff_dst, bd_weights, bd_diff_src;  // backward data, in its layouts
  memory bw_src, bw_diff_dst, bw_diff_weights;  // backward weights, in its layouts
  memory fwd_scratch, bd_scratch, bw_scratch;

  Raw() {
    const memory::dims act{kN, kC, kHW, kHW}, wei{kC, kC, 3, 3};
    const memory::dims strides{1, 1}, dilates{0, 0}, pad{1, 1};
    const auto f32 = memory::data_type::f32;
    const memory::desc act_any(act, f32, memory::format_tag::any);
    const memory::desc wei_any(wei, f32, memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::convolution_forward::primitive_desc fpd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, act_any, wei_any,
         memory::desc(), act_any, strides, dilates, pad, pad},
        attr, engine);
    const dnnl::convolution_backward_data::primitive_desc dpd(
        {dnnl::algorithm::convolution_direct, act_any, wei_any, act_any, strides, dilates, pad,
         pad},
        attr, engine, fpd);
    const dnnl::convolution_backward_weights::primitive_desc wpd(
        {dnnl::algorithm::convolution_direct, act_any, wei_any, memory::desc(), act_any, strides,
         dilates, pad, pad},
        attr, engine, fpd);
    fwd = dnnl::convolution_forward(fpd);
    bwd_data = dnnl::convolution_backward_data(dpd);
    bwd_weights = dnnl::convolution_backward_weights(wpd);
    // The data: the same pattern as the Loom side, reordered once into each layout.
    const memory::desc act_plain(act, f32, memory::format_tag::nchw);
    const memory::desc wei_plain(wei, f32, memory::format_tag::oihw);
    const auto filled = [&](const memory::desc& plain, const memory::desc& want) {
      memory p(plain, engine), m(want, engine);
      fill_pattern(static_cast<float*>(p.get_data_handle()),
                   static_cast<int64_t>(plain.get_size() / sizeof(float)));
      dnnl::reorder(p, m).execute(stream, p, m);
      stream.wait();
      return m;
    };
    src = filled(act_plain, fpd.src_desc());
    weights = filled(wei_plain, fpd.weights_desc());
    dst = memory(fpd.dst_desc(), engine);
    bd_diff_dst = filled(act_plain, dpd.diff_dst_desc());
    bd_weights = filled(wei_plain, dpd.weights_desc());
    bd_diff_src = memory(dpd.diff_src_desc(), engine);
    bw_src = filled(act_plain, wpd.src_desc());
    bw_diff_dst = filled(act_plain, wpd.diff_dst_desc());
    bw_diff_weights = memory(wpd.diff_weights_desc(), engine);
    fwd_scratch = memory(fpd.scratchpad_desc(), engine);
    bd_scratch = memory(dpd.scratchpad_desc(), engine);
    bw_scratch = memory(wpd.scratchpad_desc(), engine);
  }
  void forward() {
    fwd.execute(stream, {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_WEIGHTS, weights},
                         {DNNL_ARG_DST, dst},
                         {DNNL_ARG_SCRATCHPAD, fwd_scratch}});
    stream.wait();
  }
  void backward() {
    bwd_data.execute(stream, {{DNNL_ARG_DIFF_DST, bd_diff_dst},
                              {DNNL_ARG_WEIGHTS, bd_weights},
                              {DNNL_ARG_DIFF_SRC, bd_diff_src},
                              {DNNL_ARG_SCRATCHPAD, bd_scratch}});
    stream.wait();
    bwd_weights.execute(stream, {{DNNL_ARG_SRC, bw_src},
                                 {DNNL_ARG_DIFF_DST, bw_diff_dst},
                                 {DNNL_ARG_DIFF_WEIGHTS, bw_diff_weights},
                                 {DNNL_ARG_SCRATCHPAD, bw_scratch}});
    stream.wait();
  }
};

LOOM_BENCH_PEER(raw, "conv3x3.fwd") {
  auto raw = std::make_shared<Raw>();
  return ms_per_call([raw] { raw->forward(); });
}

LOOM_BENCH_PEER(raw, "conv3x3.fwd.channels_last") {
  auto raw = std::make_shared<Raw>();
  return ms_per_call([raw] { raw->forward(); });
}

LOOM_BENCH_PEER(raw, "conv3x3.fwdbwd") {
  auto raw = std::make_shared<Raw>();
  return ms_per_call([raw] {
    raw->forward();
    raw->backward();
  });
}

}  // namespace
}  // namespace loom::bench
