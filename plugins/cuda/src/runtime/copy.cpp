// copy_ at the CUDA key: host <-> device and device <-> device (the dispatcher picks the CUDA
// kernel whenever one side is a CUDA tensor, Note [Dispatch key order]).
//
// Note [CUDA copies]: the bytes move with cudaMemcpyAsync on the current stream of the CUDA
// side; strides, dtype conversion and broadcasting happen on the device through H2's
// copy_kernel, and a non-contiguous host side is made contiguous on the host first.
// - host -> device and device -> host are synchronous (the stream is waited for), except with
//   non_blocking=true and a pinned host block, as in PyTorch: then copy_ returns at once, the
//   caller synchronizes before reading a host destination, and the pinned block is not reused
//   before the copy has finished (Note [Pinned blocks and asynchronous copies]);
// - device -> device is always asynchronous with respect to the host (ordered on the
//   streams); between two devices the destination's stream first waits for the source's, and
//   the source's stream then waits for the copy, so neither side races with it.
#include <string_view>

#include "kernels/copy_kernel.h"
#include "loom/core/error.h"
#include "loom/core/memory_overlap.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/tensor_methods.h"
#include "runtime/allocator.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

constexpr std::string_view kOp = "copy_";

bool is_cuda(const Tensor& t) { return t.device().type() == device_type(); }

size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

Device cuda_device(int d) { return Device(device_type(), static_cast<int16_t>(d)); }

Tensor empty_on(IntArrayRef sizes, DType dtype, Device device) {
  return Tensor::empty(sizes, TensorOptions{}.with(dtype).with(device));
}

bool same_sizes(const Tensor& a, const Tensor& b) {
  const IntArrayRef x = a.sizes(), y = b.sizes();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}

// A plain byte copy does it: same shape and dtype, both dense in the same order.
bool bytes_suffice(const Tensor& dst, const Tensor& src) {
  return same_sizes(dst, src) && dst.dtype() == src.dtype() && dst.is_contiguous() &&
         src.is_contiguous();
}

void finish_host_copy(cudaStream_t stream, const void* host, bool async) {
  if (async) {
    record_pinned_use(host, stream);
  } else {
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
  }
}

void host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const int d = device_index(dst);
  DeviceGuard guard(d);
  const Tensor host = src.is_contiguous() ? src : src.contiguous();
  const bool direct = bytes_suffice(dst, host);
  // Otherwise the bytes land in a dense tensor of src's shape and dtype, and the device
  // converts and broadcasts them into dst.
  const Tensor staged = direct ? dst : empty_on(host.sizes(), host.dtype(), cuda_device(d));
  const cudaStream_t stream = current_stream(d);
  const bool async = non_blocking && is_pinned(host.data_ptr());
  LOOM_CUDA_CHECK(cudaMemcpyAsync(staged.data_ptr(), host.data_ptr(), nbytes(host),
                                  cudaMemcpyHostToDevice, stream),
                  kOp);
  finish_host_copy(stream, host.data_ptr(), async);
  if (!direct) copy_kernel(kOp, dst, staged);
}

void device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const int d = device_index(src);
  DeviceGuard guard(d);
  // The device side in dst's shape and dtype, dense.
  Tensor dense = src;
  if (!(same_sizes(dst, src) && dst.dtype() == src.dtype() && src.is_contiguous())) {
    dense = empty_on(dst.sizes(), dst.dtype(), cuda_device(d));
    copy_kernel(kOp, dense, src);
  }
  const bool direct = dst.is_contiguous();
  const Tensor host = direct ? dst : empty_on(dst.sizes(), dst.dtype(), kCPU);
  const cudaStream_t stream = current_stream(d);
  const bool async = non_blocking && direct && is_pinned(host.data_ptr());
  LOOM_CUDA_CHECK(cudaMemcpyAsync(host.data_ptr(), dense.data_ptr(), nbytes(dense),
                                  cudaMemcpyDeviceToHost, stream),
                  kOp);
  finish_host_copy(stream, host.data_ptr(), async);
  if (!direct) loom::copy_(dst, host);  // host-side strides: the CPU kernel
}

void device_to_device(const Tensor& dst, const Tensor& src) {
  const int dd = device_index(dst), sd = device_index(src);
  if (dd == sd) {
    DeviceGuard guard(dd);
    if (bytes_suffice(dst, src)) {
      LOOM_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes(src),
                                      cudaMemcpyDeviceToDevice, current_stream(dd)),
                      kOp);
    } else {
      copy_kernel(kOp, dst, src);
    }
    return;
  }
  // Between devices: src's bytes (made dense on its own device) go to a dense tensor on dst's
  // device, which converts and broadcasts them into dst.
  Tensor dense_src;
  {
    DeviceGuard guard(sd);
    dense_src = src.is_contiguous() ? src : contiguous_cuda(src);
  }
  const bool direct = bytes_suffice(dst, dense_src);
  const Tensor staged = direct ? dst : [&] {
    DeviceGuard guard(dd);
    return empty_on(dense_src.sizes(), dense_src.dtype(), cuda_device(dd));
  }();
  const cudaStream_t src_stream = current_stream(sd), dst_stream = current_stream(dd);
  cudaEvent_t src_ready = nullptr, copied = nullptr;
  {
    DeviceGuard guard(sd);
    LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&src_ready, cudaEventDisableTiming), kOp);
    LOOM_CUDA_CHECK(cudaEventRecord(src_ready, src_stream), kOp);
  }
  {
    DeviceGuard guard(dd);
    LOOM_CUDA_CHECK(cudaStreamWaitEvent(dst_stream, src_ready, 0), kOp);
    LOOM_CUDA_CHECK(cudaMemcpyPeerAsync(staged.data_ptr(), dd, dense_src.data_ptr(), sd,
                                        nbytes(dense_src), dst_stream),
                    kOp);
    LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), kOp);
    LOOM_CUDA_CHECK(cudaEventRecord(copied, dst_stream), kOp);
  }
  {
    DeviceGuard guard(sd);
    LOOM_CUDA_CHECK(cudaStreamWaitEvent(src_stream, copied, 0), kOp);
  }
  // Destroying a recorded event is safe: the runtime frees it once it has completed.
  (void)cudaEventDestroy(src_ready);
  (void)cudaEventDestroy(copied);
  if (!direct) {
    DeviceGuard guard(dd);
    copy_kernel(kOp, dst, staged);
  }
}

// The C++ signature of "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) ->
// Tensor(a!)", as the CPU kernel has it (ops/core/cpu/copy.cpp).
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  LOOM_CHECK_T(TypeError, src.defined(),
               "copy_: expected a proper Tensor but got an undefined "
               "Tensor for argument 'src'");
  if (self.is_same(src)) return self;
  for (const Tensor* t : {static_cast<const Tensor*>(&self), &src}) {
    if (!is_cuda(*t) && !t->device().is_cpu()) {
      LOOM_THROW(DeviceError, "copy_: the CUDA backend copies between cuda and cpu only, got ",
                 describe_call(kOp, {{"self", self}, {"src", src}}));
    }
  }
  check_available(kOp);
  if (self.numel() == 0) return self;
  assert_no_internal_overlap(kOp, self);  // Note [Memory overlap]
  if (is_cuda(self) && is_cuda(src)) {
    device_to_device(self, src);
  } else if (is_cuda(self)) {
    host_to_device(self, src, non_blocking);
  } else {
    device_to_host(self, src, non_blocking);
  }
  check_launch(kOp);
  self.bump_version();
  return self;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("copy_", &copy_);
}

}  // namespace loom::cuda
