// A random-program fuzzer for capture (docs/design/compile.md, section 10): random chains of
// pointwise, broadcasting, reduction, view and matmul ops over random shapes and dtypes. For
// each program, the captured graph's replay on other values must equal the program run
// eagerly (bit for bit: the same kernels in the same order), with the same gradients, and
// the graph's Meta propagation must give the eager results' sizes, strides and dtypes; and
// loom::compile's fused loops must give eager's values (within float rounding: the loops use
// other math functions) and layouts, and, with inputs that require grad, eager's gradients
// (the fused groups' generated backward loops). A bounded number of seeds runs in CI;
// LOOM_FUZZ_PROGRAMS=N, LOOM_FUZZ_COMPILED=N and LOOM_FUZZ_COMPILED_GRAD=N run more.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "loom/compile/compile.h"
#include "loom/graph/capture.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::graph {
namespace {

using loom::testing::expect_close;
using loom::testing::make_tensor;
using loom::testing::to_doubles;
using Shape = std::vector<int64_t>;

Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937_64& gen) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::uniform_real_distribution<double> dist(-1.5, 1.5);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(gen);
  return make_tensor(v, shape, dtype);
}

bool broadcastable(IntArrayRef a, IntArrayRef b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t x = a[a.size() - i], y = b[b.size() - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

/// The program of seed: each step picks an op and operands among the tensors so far, from
/// the shapes it sees, so the same seed and input shapes make the same program.
std::vector<Tensor> program(uint64_t seed, const std::vector<Tensor>& in) {
  std::mt19937_64 gen(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(gen() % n); };
  std::vector<Tensor> vals(in.begin(), in.end());
  const int steps = 3 + static_cast<int>(pick(8));
  for (int s = 0; s < steps; ++s) {
    const Tensor& a = vals[pick(vals.size())];
    switch (pick(7)) {
      case 0: {  // unary
        const size_t u = pick(6);
        vals.push_back(u == 0   ? neg(a)
                       : u == 1 ? tanh(a)
                       : u == 2 ? sigmoid(a)
                       : u == 3 ? relu(a)
                       : u == 4 ? sin(a)
                                : exp(mul(a, 0.25)));
        break;
      }
      case 1:
      case 2: {  // binary with broadcasting, against any operand it broadcasts with
        std::vector<size_t> ok;
        for (size_t j = 0; j < vals.size(); ++j) {
          if (broadcastable(a.sizes(), vals[j].sizes())) ok.push_back(j);
        }
        const Tensor& b = vals[ok[pick(ok.size())]];
        const size_t o = pick(5);
        vals.push_back(o == 0   ? add(a, b)
                       : o == 1 ? sub(a, b)
                       : o == 2 ? mul(a, b)
                       : o == 3 ? maximum(a, b)
                                : minimum(a, b));
        break;
      }
      case 3: {  // reduction over one dim
        if (a.dim() == 0) break;
        const int64_t d = static_cast<int64_t>(pick(static_cast<size_t>(a.dim())));
        const bool keep = pick(2) == 1;
        const size_t r = pick(3);
        vals.push_back(r == 0   ? sum(a, {d}, keep)
                       : r == 1 ? mean(a, {d}, keep)
                                : amax(a, {d}, keep));
        break;
      }
      case 4: {  // views
        if (a.dim() >= 2) {
          vals.push_back(transpose(a, 0, a.dim() - 1));
        } else {
          vals.push_back(unsqueeze(a, 0));
        }
        break;
      }
      case 5: {  // a copy in another layout
        vals.push_back(reshape(contiguous(a), {-1}));
        break;
      }
      case 6: {  // matmul with an operand whose shape fits, when there is one
        if (a.dim() != 2) break;
        for (const Tensor& b : vals) {
          if (b.dim() == 2 && b.size(0) == a.size(1)) {
            vals.push_back(matmul(a, b));
            break;
          }
        }
        break;
      }
    }
  }
  return {vals.back(), vals[vals.size() / 2]};
}

/// One fuzzed program: its seed, dtype and inputs (shapes drawn around a base of up to
/// rows x cols, so that they broadcast), and how a failure names it.
struct Case {
  uint64_t seed;
  DType dtype;
  std::vector<Tensor> in;
  std::string where;
};

Case random_case(int p, std::mt19937_64& gen, int64_t rows, int64_t cols) {
  Case c;
  c.seed = gen();
  c.dtype = gen() % 2 ? DType::Float32 : DType::Float64;
  const Shape base = {1 + static_cast<int64_t>(gen() % rows),
                      1 + static_cast<int64_t>(gen() % cols)};
  const std::vector<Shape> shapes = {base, {base[1]}, {base[0], 1}, {}};
  for (int i = 0; i < 3; ++i)
    c.in.push_back(random_tensor(shapes[gen() % shapes.size()], c.dtype, gen));
  c.where = "program " + std::to_string(p) + " (seed " + std::to_string(c.seed) + ", " +
            std::string(dtype_name(c.dtype)) + ")";
  return c;
}

/// The number of programs a test runs: the environment variable's, else fallback.
int program_count(const char* variable, int fallback) {
  const char* env = std::getenv(variable);
  return env != nullptr ? std::atoi(env) : fallback;
}

TEST(RandomPrograms, ReplayAndPropagationMatchEager) {
  loom::init();
  const int programs = program_count("LOOM_FUZZ_PROGRAMS", 150);
  std::mt19937_64 gen(20261207);
  int checked = 0;
  for (int p = 0; p < programs; ++p) {
    const Case c = random_case(p, gen, 4, 5);
    const DType dtype = c.dtype;
    const std::vector<Tensor>& in = c.in;
    const std::string& where = c.where;
    auto fn = [seed = c.seed](const std::vector<Tensor>& x) { return program(seed, x); };
    const Graph g = capture(fn, in);

    // Replay on other values (same shapes), with gradients, against eager.
    std::vector<Tensor> a, b;
    for (const Tensor& t : in) {
      Tensor u = random_tensor(t.sizes().vec(), dtype, gen);
      a.push_back(u);
      b.push_back(u.clone());
    }
    for (Tensor& t : a) t.set_requires_grad(true);
    for (Tensor& t : b) t.set_requires_grad(true);
    Graph ga = capture(fn, std::vector<Tensor>(a.begin(), a.end()));  // guards: requires_grad
    const std::vector<Tensor> got = ga.run(a), want = fn(b);
    ASSERT_EQ(got.size(), want.size()) << where;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].sizes().vec(), want[i].sizes().vec()) << where << "\n" << g.str();
      EXPECT_EQ(to_doubles(got[i]), to_doubles(want[i])) << where << ", output " << i << "\n"
                                                         << g.str();
    }
    sum(add(sum(got[0]), sum(got[1]))).backward();
    sum(add(sum(want[0]), sum(want[1]))).backward();
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].grad().defined(), b[i].grad().defined()) << where << ", input " << i;
      if (a[i].grad().defined()) {
        EXPECT_EQ(to_doubles(a[i].grad()), to_doubles(b[i].grad())) << where << ", grad " << i;
      }
    }

    // Meta propagation against eager's metadata.
    const std::vector<Tensor> meta = g.propagate(in), eager = fn(in);
    ASSERT_EQ(meta.size(), eager.size()) << where;
    for (size_t i = 0; i < meta.size(); ++i) {
      EXPECT_EQ(meta[i].sizes().vec(), eager[i].sizes().vec()) << where << "\n" << g.str();
      EXPECT_EQ(meta[i].dtype(), eager[i].dtype()) << where;
      for (int64_t d = 0; d < eager[i].dim(); ++d) {
        if (eager[i].size(d) > 1) {
          EXPECT_EQ(meta[i].stride(d), eager[i].stride(d)) << where << ", output " << i << "\n"
                                                           << g.str();
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, programs);
}

TEST(RandomPrograms, CompiledMatchesEager) {
  loom::init();
  const auto cache =
      std::filesystem::temp_directory_path() / ("loom-fuzz-cache-" + std::to_string(getpid()));
  setenv("LOOM_CACHE_DIR", cache.c_str(), 1);
  const int programs = program_count("LOOM_FUZZ_COMPILED", 40);
  std::mt19937_64 gen(20261208);
  autograd::NoGradGuard no_grad;  // fusion is for graphs autograd does not record
  int fused = 0;
  for (int p = 0; p < programs; ++p) {
    const Case c = random_case(p, gen, 40, 50);
    const std::vector<Tensor>& in = c.in;
    const std::string& where = c.where;
    std::vector<Tensor> other;
    for (const Tensor& t : in) other.push_back(random_tensor(t.sizes().vec(), c.dtype, gen));
    auto fn = [seed = c.seed](const std::vector<Tensor>& x) { return program(seed, x); };
    CompiledFunction f = compile(fn, {.name = where});
    f(in);                                                       // capture and compile
    const std::vector<Tensor> got = f(other), want = fn(other);  // a replay on other values
    ASSERT_EQ(f.stats().replays, 1) << where;
    ASSERT_EQ(f.stats().fallbacks, 0) << where;
    fused += f.stats().fused_groups > 0;
    ASSERT_EQ(got.size(), want.size()) << where;
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(where + ", output " + std::to_string(i));
      ASSERT_EQ(got[i].dtype(), want[i].dtype());
      for (int64_t d = 0; d < want[i].dim(); ++d) {
        if (want[i].size(d) > 1) {
          EXPECT_EQ(got[i].stride(d), want[i].stride(d)) << "dim " << d;
        }
      }
      expect_close(got[i], want[i].sizes(), to_doubles(want[i]),
                   c.dtype == DType::Float64 ? 1e-12 : 1e-5, 1e-6);
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << where << ": the graph\n" << capture(fn, other).str();
      return;
    }
  }
  EXPECT_GT(fused, programs / 5) << "too few programs had a fused group to check";
  std::filesystem::remove_all(cache);
}

TEST(RandomPrograms, CompiledGradientsMatchEager) {
  // The same programs with inputs that require grad: fused groups get generated backward
  // loops, the other ops eager's derivatives; gradients must be eager's within rounding.
  loom::init();
  const auto cache =
      std::filesystem::temp_directory_path() / ("loom-fuzz-grad-cache-" + std::to_string(getpid()));
  setenv("LOOM_CACHE_DIR", cache.c_str(), 1);
  const int programs = program_count("LOOM_FUZZ_COMPILED_GRAD", 30);
  std::mt19937_64 gen(20261209);
  int fused = 0;
  for (int p = 0; p < programs; ++p) {
    const Case c = random_case(p, gen, 40, 50);
    auto fn = [seed = c.seed](const std::vector<Tensor>& x) { return program(seed, x); };
    CompiledFunction f = compile(fn, {.name = c.where});
    auto leaves = [&](const std::vector<Tensor>& in) {
      std::vector<Tensor> out;
      for (const Tensor& t : in) {
        out.push_back(t.clone());
        out.back().set_requires_grad(true);
      }
      return out;
    };
    f(leaves(c.in));  // capture and compile
    std::vector<Tensor> values;
    for (const Tensor& t : c.in) values.push_back(random_tensor(t.sizes().vec(), c.dtype, gen));
    const std::vector<Tensor> a = leaves(values), b = leaves(values);
    const std::vector<Tensor> got = f(a), want = fn(b);  // a replay on other values
    ASSERT_EQ(f.stats().replays, 1) << c.where;
    fused += f.stats().fused_groups > 0;
    // A weighted sum of the first output (a dense gradient) plus the sum of the second (an
    // expanded one).
    const Tensor w = random_tensor(want[0].sizes().vec(), c.dtype, gen);
    auto loss = [&](const std::vector<Tensor>& out) {
      Tensor l = add(sum(mul(out[0], w)), sum(out[1]));
      return l;
    };
    const Tensor lg = loss(got), lw = loss(want);
    if (!lw.requires_grad()) continue;  // nothing reaches an input
    lg.backward();
    lw.backward();
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(c.where + ", gradient of input " + std::to_string(i));
      ASSERT_EQ(a[i].grad().defined(), b[i].grad().defined());
      if (!b[i].grad().defined()) continue;
      expect_close(a[i].grad(), b[i].grad().sizes(), to_doubles(b[i].grad()),
                   c.dtype == DType::Float64 ? 1e-10 : 1e-4, 1e-5);
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << c.where << ": the graph\n" << capture(fn, leaves(values)).str();
      return;
    }
  }
  EXPECT_GT(fused, programs / 5) << "too few programs had a fused group to check";
  std::filesystem::remove_all(cache);
}

}  // namespace
}  // namespace loom::graph
