#pragma once
// TensorIterator: the strided elementwise engine every pointwise reference kernel runs on
// (see docs/design/elementwise.md).
//
// A kernel names its inputs (tensors, and scalars that only take part in type promotion),
// says how the result dtype follows from the inputs (ResultRule) and where the result goes
// (a new tensor, out=, or self for in-place), calls build(), then runs a functor on the
// computation type with for_each<Out, In...>(f) and returns finish(). build() does
// PyTorch's broadcasting and type promotion, converts inputs whose dtype differs from the
// common dtype, and coalesces dimensions so a contiguous (or broadcast-compatible) case
// becomes one flat loop the compiler vectorises. Large loops run in parallel with OpenMP.
//
// Functors must not throw: they run inside OpenMP regions. Report a bad element (integer
// division by zero) through a flag and throw after for_each returns.

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "cpu/elementwise.h"
#include "cpu/parallel.h"
#include "cpu/vec/pointwise_kernels.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor_impl.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::ops::cpu {

// Dtype categories, promotion and output kinds: the rules every backend shares
// (loom/ops/meta/pointwise.h).
using meta::broadcast_shapes;
using meta::kAllTypes;
using meta::kBool;
using meta::kFloats;
using meta::kInts;
using meta::OutputKind;
using meta::ResultRule;
using meta::ResultTypeState;

/// Calls f (`[&]<typename T>(T*)`) for dtype d if its category is in Cats; otherwise throws
/// PyTorch's `"op" not implemented for 'Long'`.
template <unsigned Cats, typename F>
void dispatch_dtypes(std::string_view op, DType d, F&& f) {
  dispatch_all(d, [&]<typename T>(T* p) {
    constexpr unsigned cat = std::is_same_v<T, bool> ? kBool : is_floating_v<T> ? kFloats : kInts;
    if constexpr ((Cats & cat) != 0) {
      f(p);
    } else {
      throw_dtype_unsupported(op, d);
    }
  });
}

/// T, whatever I is: expands a pack of indices into a pack of types.
template <size_t I, typename T>
using RepeatType = T;

/// The elementwise engine; see the file comment.
class TensorIterator {
 public:
  /// op names the call in errors ("add.Tensor", "exp_").
  explicit TensorIterator(std::string_view op) : op_(op) {}

  /// Adds a tensor input. With as_dtype the input is read as that dtype and stays out of
  /// type promotion (where's condition is read as bool).
  TensorIterator& add_input(std::string_view name, const Tensor& t,
                            std::optional<DType> as_dtype = std::nullopt);
  /// A scalar operand: it takes part in promotion; the kernel captures its value.
  TensorIterator& add_scalar(const Scalar& s) {
    promotion_.add(s);
    return *this;
  }
  /// Sets where the result goes (default: a new tensor).
  TensorIterator& set_output(const Tensor& out, OutputKind kind) {
    out_ = out;
    kind_ = kind;
    return *this;
  }
  /// Sets the result rule (default Common).
  TensorIterator& set_rule(ResultRule r) {
    rule_ = r;
    return *this;
  }
  /// Forces the dtype the inputs are read in (and, under ResultRule::Common, written in).
  TensorIterator& force_common_dtype(DType d) {
    forced_common_ = d;
    return *this;
  }
  /// Promotes, broadcasts, checks and allocates. Call once, after the add_* calls.
  void build();

  /// The op name given at construction.
  std::string_view op() const { return op_; }
  /// The dtype tensor inputs are read as (after build()).
  DType common_dtype() const { return common_; }
  /// The dtype the loop writes (after build()).
  DType result_dtype() const { return result_; }
  /// The broadcast shape (after build()).
  IntArrayRef shape() const { return {shape_.data(), shape_.size()}; }
  /// Number of elements of the result.
  int64_t numel() const { return numel_; }
  /// Whether the operands are meta tensors (after build()): sizes, strides and dtypes only,
  /// so for_each runs nothing and flat() is false (Note [Meta kernels share the reference's
  /// setup]).
  bool is_meta() const { return meta_; }

  /// Runs out[i] = f(in_0[i], ...) over every element. Out is the storage type of
  /// result_dtype(), In... those of the inputs in order (the common dtype unless given
  /// as_dtype); f takes and returns compute types (float for the 16-bit floats).
  template <typename Out, typename... In, typename F>
  void for_each(F&& f);
  /// for_each with N inputs of storage type In.
  template <typename Out, typename In, size_t N, typename F>
  void for_each_n(F&& f) {
    for_each_n_impl<Out, In>(std::forward<F>(f), std::make_index_sequence<N>{});
  }

  /// Writes the result where it belongs (casting into out=/self if the loop ran in another
  /// dtype), bumps the version of out=/self, and returns the result tensor.
  Tensor finish();

  /// Minimum number of elements for a parallel loop.
  static constexpr int64_t kParallelGrain = 32768;
  /// Output size from which the per-ISA loops use non-temporal stores (Note [Streaming
  /// stores] in cpu/vec/pointwise_kernels.cpp): half the last-level cache of the machines
  /// Loom is tuned on, above which the result would not stay cached anyway.
  static constexpr int64_t kStreamBytes = int64_t{16} << 20;

  // ---- Note [Per-ISA fast path] ----
  // A kernel with a per-ISA loop (cpu/vec/pointwise_kernels.h) calls it when, after build(),
  // flat(dtype) holds: the coalesced index space is one dimension, the output and every
  // input have storage type dtype, and each steps through memory by one element (an input
  // may instead have stride 0: a broadcast single value, scalar_input(k)). It then runs the
  // loop with parallel_ranges over data<T>(k) and returns finish(); every other case (strided,
  // broadcast rows, other dtypes, conversions) runs for_each. Both paths apply the same
  // formula, so the choice changes speed only (tests compare every ISA level and the
  // strided path against one float64 oracle).

  /// Whether the fast path applies for storage dtype (see Note [Per-ISA fast path]).
  bool flat(DType dtype) const;
  /// Number of tensor inputs.
  size_t num_inputs() const { return inputs_.size(); }
  /// Whether input k (0-based) is a single broadcast value on the fast path (stride 0).
  bool scalar_input(size_t k) const { return strides_[k + 1][0] == 0; }
  /// Operand k's first element (0 = the output, k = input k - 1), after build().
  template <typename T>
  T* data(size_t k) const {
    return reinterpret_cast<T*>(data_[k]);
  }
  /// Whether the per-ISA loops should write the output with streaming stores.
  bool stream_output() const {
    return numel_ * static_cast<int64_t>(result_buf_.element_size()) >= kStreamBytes;
  }
  /// Runs body(begin, end) over [0, numel()): one range per thread when the loop is large
  /// (Note [One range per thread] in cpu/parallel.h), else one call. body must not throw.
  template <typename Body>
  void parallel_ranges(Body&& body) const {
    cpu::parallel_ranges(numel_, kParallelGrain, std::forward<Body>(body));
  }

 private:
  struct Operand {
    std::string_view name;
    Tensor tensor;
    std::optional<DType> as_dtype;
  };
  template <typename Out, typename In, size_t... I, typename F>
  void for_each_n_impl(F&& f, std::index_sequence<I...>) {
    for_each<Out, RepeatType<I, In>...>(std::forward<F>(f));
  }
  void check_dtypes(std::initializer_list<DType> storage) const;

  std::string_view op_;
  // Inline storage: a small op allocates nothing here (the 1-element add is overhead-bound).
  absl::InlinedVector<Operand, 4> inputs_;
  ResultTypeState promotion_;
  Tensor out_;
  OutputKind kind_ = OutputKind::New;
  ResultRule rule_ = ResultRule::Common;
  std::optional<DType> forced_common_;
  bool meta_ = false;

  DType common_ = DType::Float32, result_ = DType::Float32;
  DimVector shape_;
  int64_t numel_ = 0;
  Tensor result_buf_;  // where the loop writes: out_ itself, or a temporary of result_
  // Coalesced geometry: sizes_[d] and, per operand (0 = output), byte strides.
  DimVector sizes_;
  absl::InlinedVector<DimVector, 4> strides_;
  absl::InlinedVector<char*, 4> data_;
};

// ---- the per-ISA loops (Note [Per-ISA fast path]) -------------------------------------------
// Each runs the loop over every thread's range and returns true when it.flat(T's dtype) holds
// (T is float or double); otherwise it does nothing and returns false, and the caller runs
// for_each with the same formula.

using loom::cpu::BinaryKernel;
using loom::cpu::UnaryKernel;

/// out = a (k) b over the two tensor inputs; b may be a broadcast single value; alpha scales
/// b for BinaryKernel::add.
template <typename T>
bool flat_binary(TensorIterator& it, BinaryKernel k, T alpha);
/// out = a (k) value over the one tensor input (a Scalar other, converted by the caller).
template <typename T>
bool flat_binary_scalar(TensorIterator& it, BinaryKernel k, T value);
/// out = k(x) over the one tensor input.
template <typename T>
bool flat_unary(TensorIterator& it, UnaryKernel k);
/// out = x <= threshold ? 0 : grad over the inputs (grad, x).
template <typename T>
bool flat_threshold_backward(TensorIterator& it, T threshold);

/// Whether T has per-ISA loops (float32 and float64).
template <typename T>
inline constexpr bool kHasFlatLoops = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// Copies src into dst (same device), broadcasting src to dst's shape and converting its
/// dtype; the engine of copy_, to and the input conversions.
void copy_into(std::string_view op, const Tensor& dst, const Tensor& src);
/// A contiguous copy of t converted to dtype.
Tensor cast_copy(const Tensor& t, DType dtype);

// ---- implementation of the templates -------------------------------------------------------

template <typename Out, typename... In, typename F>
void TensorIterator::for_each(F&& f) {
  constexpr size_t N = sizeof...(In);
  check_dtypes({storage_dtype<Out>, storage_dtype<In>...});
  LOOM_CHECK(inputs_.size() == N, op_, ": internal error: for_each with ", N,
             " inputs on an iterator with ", inputs_.size());
  if (numel_ == 0 || meta_) return;
  const int64_t ndim = static_cast<int64_t>(sizes_.size());
  const int64_t inner = sizes_[ndim - 1];
  std::array<int64_t, N + 1> inner_stride;
  for (size_t k = 0; k <= N; ++k) inner_stride[k] = strides_[k][ndim - 1];
  const bool contiguous = [&] {
    constexpr std::array<int64_t, N + 1> es{int64_t(sizeof(Out)), int64_t(sizeof(In))...};
    for (size_t k = 0; k <= N; ++k)
      if (inner_stride[k] != es[k]) return false;
    return true;
  }();

  auto row = [&]<size_t... I>(std::index_sequence<I...>, std::array<char*, N + 1> p, int64_t n) {
    if (contiguous) {
      // Plain pointers and unit strides. `omp simd` has the loop vectorised even at -O2,
      // whose cost model otherwise leaves loops of unknown length scalar; an element's
      // output never feeds another element's input (Note [Memory overlap]).
      Out* __restrict o = reinterpret_cast<Out*>(p[0]);
      std::tuple<const In*...> in{reinterpret_cast<const In*>(p[I + 1])...};
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        o[i] = convert<Out>(f(convert<compute_t<In>>(std::get<I>(in)[i])...));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * inner_stride[0]) = convert<Out>(f(convert<compute_t<In>>(
            *reinterpret_cast<const In*>(p[I + 1] + i * inner_stride[I + 1]))...));
      }
    }
  };

  parallel_ranges([&](int64_t begin, int64_t end) {
    // Position of `begin` in the coalesced index space.
    DimVector idx(static_cast<size_t>(ndim), 0);
    int64_t rem = begin;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      idx[d] = rem % sizes_[d];
      rem /= sizes_[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      std::array<char*, N + 1> p;
      for (size_t k = 0; k <= N; ++k) {
        char* q = data_[k];
        for (int64_t d = 0; d < ndim; ++d) q += idx[d] * strides_[k][d];
        p[k] = q;
      }
      const int64_t n = std::min(end - pos, inner - idx[ndim - 1]);
      row(std::make_index_sequence<N>{}, p, n);
      pos += n;
      idx[ndim - 1] += n;
      for (int64_t d = ndim - 1; d > 0 && idx[d] == sizes_[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  });
}

// ---- the few-lines-per-op layer ----------------------------------------------------------------

/// Sets an iterator's output from a kernel variant: out == nullptr gives a new tensor.
inline void set_variant_output(TensorIterator& it, const Tensor* out, bool inplace) {
  if (inplace) {
    it.set_output(*out, OutputKind::InPlace);
  } else if (out != nullptr) {
    it.set_output(*out, OutputKind::Out);
  }
}

/// The per-ISA loop of a functor op (Note [Per-ISA fast path]): a unary or binary Op type
/// may name one with `static constexpr UnaryKernel kFlat` (or BinaryKernel); run_uniform
/// tries it before the functor loop.
template <typename Op>
constexpr auto flat_kernel_of() {
  if constexpr (requires { Op::kFlat; }) {
    return std::optional{Op::kFlat};
  } else {
    return std::optional<UnaryKernel>{};
  }
}

/// Runs the iterator with the functor that make<T>() returns for the common storage type T
/// (all inputs read as T), restricted to the dtype categories Cats. flat: the op's per-ISA
/// loop for float/double (a UnaryKernel for N == 1, a BinaryKernel for N == 2).
template <unsigned Cats, ResultRule Rule, size_t N, typename Make, typename Flat = UnaryKernel>
Tensor run_uniform(TensorIterator& it, Make&& make, std::optional<Flat> flat = std::nullopt) {
  dispatch_dtypes<Cats>(it.op(), it.common_dtype(), [&]<typename T>(T*) {
    if constexpr (kHasFlatLoops<T> && (Cats & kFloats) != 0 && Rule != ResultRule::Bool) {
      if constexpr (std::is_same_v<Flat, UnaryKernel> && N == 1) {
        if (flat && flat_unary<T>(it, *flat)) return;
      } else if constexpr (std::is_same_v<Flat, BinaryKernel> && N == 2) {
        if (flat && flat_binary<T>(it, *flat, T(1))) return;
      }
    }
    auto f = make.template operator()<T>();
    if constexpr (Rule == ResultRule::Bool) {
      it.template for_each_n<bool, T, N>(f);
    } else {
      it.template for_each_n<T, T, N>(f);
    }
  });
  return it.finish();
}

/// A unary op described by a functor type Op with:
///   static constexpr unsigned kCats;        dtype categories it accepts
///   static constexpr ResultRule kRule;      how the result dtype follows
///   template <typename C> C operator()(C x) const;   on the compute type
/// unary_kernel<Op>, unary_inplace<Op>, unary_out<Op> are its three variants.
template <typename Op>
Tensor unary_run(std::string_view name, const Tensor& self, const Tensor* out, bool inplace,
                 Op op = {}) {
  TensorIterator it(name);
  it.add_input("self", self).set_rule(Op::kRule);
  set_variant_output(it, out, inplace);
  it.build();
  return run_uniform<Op::kCats, Op::kRule, 1>(it, [&]<typename T>() { return op; },
                                              flat_kernel_of<Op>());
}

/// A binary op on (self, other) tensors; make<T>() returns the functor on compute_t<T>.
/// inplace: out is self.
/// flat: the op's per-ISA loop for float/double (Note [Per-ISA fast path]).
template <unsigned Cats, ResultRule Rule, typename Make>
Tensor binary_run(std::string_view name, const Tensor& self, const Tensor& other, const Tensor* out,
                  bool inplace, Make&& make, std::optional<BinaryKernel> flat = std::nullopt) {
  TensorIterator it(name);
  it.add_input("self", self).add_input("other", other).set_rule(Rule);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  return run_uniform<Cats, Rule, 2>(it, make, flat);
}

/// A binary op on a tensor and a Scalar (a wrapped number in promotion, captured by value).
template <unsigned Cats, ResultRule Rule, typename Make>
Tensor binary_scalar_run(std::string_view name, const Tensor& self, const Scalar& other,
                         const Tensor* out, bool inplace, Make&& make,
                         std::optional<BinaryKernel> flat = std::nullopt) {
  TensorIterator it(name);
  it.add_input("self", self).add_scalar(other).set_rule(Rule);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  if ((Cats & kFloats) != 0 && Rule != ResultRule::Bool && flat) {
    bool done = false;
    if (it.common_dtype() == DType::Float32) {
      done = flat_binary_scalar<float>(it, *flat, other.to<float>());
    } else if (it.common_dtype() == DType::Float64) {
      done = flat_binary_scalar<double>(it, *flat, other.to<double>());
    }
    if (done) return it.finish();
  }
  return run_uniform<Cats, Rule, 1>(it, [&]<typename T>() {
    using C = compute_t<T>;
    auto f = make.template operator()<T>();
    const C s = other.to<C>();
    return [f, s](C a) { return f(a, s); };
  });
}

using meta::variant_name;  // the names of an op's variants in messages

/// The three variants of a unary functor op (see unary_run).
template <typename Op>
Tensor unary_fn(const Tensor& self) {
  return unary_run<Op>(variant_name<Op>(""), self, nullptr, false);
}
template <typename Op>
Tensor& unary_inplace(Tensor& self) {
  unary_run<Op>(variant_name<Op>("_"), self, &self, true);
  return self;
}
template <typename Op>
Tensor& unary_out(const Tensor& self, Tensor& out) {
  unary_run<Op>(variant_name<Op>(".out"), self, &out, false);
  return out;
}

/// A binary functor op's per-ISA loop: its `static constexpr BinaryKernel kFlat`, if any.
template <typename Op>
constexpr std::optional<BinaryKernel> binary_flat_of() {
  if constexpr (requires { Op::kFlat; }) {
    return Op::kFlat;
  } else {
    return std::nullopt;
  }
}

/// Variants of a stateless binary functor op Op (kName, kCats, kRule, operator()(C, C)).
template <typename Op>
Tensor binary_fn(const Tensor& self, const Tensor& other) {
  return binary_run<Op::kCats, Op::kRule>(variant_name<Op>(""), self, other, nullptr, false,
                                          []<typename T>() { return Op{}; }, binary_flat_of<Op>());
}
template <typename Op>
Tensor& binary_inplace(Tensor& self, const Tensor& other) {
  binary_run<Op::kCats, Op::kRule>(variant_name<Op>("_"), self, other, &self, true,
                                   []<typename T>() { return Op{}; }, binary_flat_of<Op>());
  return self;
}
template <typename Op>
Tensor& binary_out(const Tensor& self, const Tensor& other, Tensor& out) {
  binary_run<Op::kCats, Op::kRule>(variant_name<Op>(".out"), self, other, &out, false,
                                   []<typename T>() { return Op{}; }, binary_flat_of<Op>());
  return out;
}
template <typename Op>
Tensor binary_scalar_fn(const Tensor& self, const Scalar& other) {
  return binary_scalar_run<Op::kCats, Op::kRule>(variant_name<Op>(""), self, other, nullptr, false,
                                                 []<typename T>() { return Op{}; },
                                                 binary_flat_of<Op>());
}
template <typename Op>
Tensor& binary_scalar_inplace(Tensor& self, const Scalar& other) {
  binary_scalar_run<Op::kCats, Op::kRule>(variant_name<Op>("_"), self, other, &self, true,
                                          []<typename T>() { return Op{}; }, binary_flat_of<Op>());
  return self;
}
template <typename Op>
Tensor& binary_scalar_out(const Tensor& self, const Scalar& other, Tensor& out) {
  binary_scalar_run<Op::kCats, Op::kRule>(variant_name<Op>(".out"), self, other, &out, false,
                                          []<typename T>() { return Op{}; }, binary_flat_of<Op>());
  return out;
}

}  // namespace loom::ops::cpu
