// Tests for the schema language: dispatcher/src/schema_parser.cpp and dispatcher/src/schema.cpp.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/dispatcher/schema.h"

namespace loom {
namespace {

// `func:` lines copied verbatim from PyTorch's aten/src/ATen/native/native_functions.yaml.
// Most are from a 2025 revision; batch_norm, clamp and as_strided_ are from older revisions
// (they parse just the same). The set covers every construct the language has.
const std::vector<std::string> kNativeFunctions = {
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] "
    "padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
    "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, str "
    "padding=\"valid\", SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
    "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] "
    "output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
    "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
    "max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
    "padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) "
    "-> (Tensor(a!), Tensor(b!))",
    "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? "
    "running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? "
    "running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
    "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
    "float eps) -> (Tensor, Tensor, Tensor)",
    "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor "
    "mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, "
    "Tensor)",
    "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
    "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",
    "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt "
    "ignore_index=-100) -> Tensor",
    "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
    "scale_grad_by_freq=False, "
    "bool sparse=False) -> Tensor",
    "dropout(Tensor input, float p, bool train) -> Tensor",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) "
    "max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
    "kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor "
    "indices)",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
    "Tensor(a!)",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
    "Tensor",
    "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "mean.names_dim(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
    "Tensor",
    "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
    "keepdim=False) -> Tensor",
    "std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
    "keepdim=False) -> (Tensor, Tensor)",
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
    "device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=None) -> Tensor",
    "zeros.names(int[] size, *, Dimname[]? names, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None) -> Tensor",
    "full.names(int[] size, Scalar fill_value, *, Dimname[]? names, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? "
    "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "logspace(Scalar start, Scalar end, int steps, float base=10.0, *, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "from_file(str filename, bool? shared=None, int? size=0, *, ScalarType? dtype=None, Layout? "
    "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "_empty_affine_quantized(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, float scale=1, int zero_point=0, MemoryFormat? "
    "memory_format=contiguous_format) -> Tensor",
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
    "device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? "
    "memory_format=None) -> Tensor(a)",
    "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
    "as_strided_(Tensor(a!) self, int[] size, int[] stride, int? storage_offset=None) -> "
    "Tensor(a!)",
    "as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> "
    "Tensor",
    "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
    "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)",
    "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
    "unflatten.Dimname(Tensor(a) self, Dimname dim, SymInt[] sizes, Dimname[] names) -> Tensor(a)",
    "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "where(Tensor condition) -> Tensor[]",
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    "upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? "
    "scales_w=None) -> Tensor",
    "upsample_trilinear3d_backward.grad_input(Tensor grad_output, SymInt[3] output_size, SymInt[5] "
    "input_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? "
    "scales_w=None, *, Tensor(a!) grad_input) -> Tensor(a!)",
    "_cudnn_rnn(Tensor input, Tensor[] weight, int weight_stride0, Tensor? weight_buf, Tensor hx, "
    "Tensor? cx, int mode, SymInt hidden_size, SymInt proj_size, int num_layers, bool "
    "batch_first, float dropout, bool train, bool bidirectional, SymInt[] batch_sizes, Tensor? "
    "dropout_state) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "_cudnn_rnn_backward(Tensor input, Tensor[] weight, int weight_stride0, Tensor weight_buf, "
    "Tensor hx, Tensor? cx, Tensor output, Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, "
    "int mode, SymInt hidden_size, SymInt proj_size, int num_layers, bool batch_first, float "
    "dropout, bool train, bool bidirectional, SymInt[] batch_sizes, Tensor? dropout_state, Tensor "
    "reserve, bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor[])",
    "_cudnn_init_dropout_state(float dropout, bool train, int dropout_seed, *, ScalarType? "
    "dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False) -> Tensor",
    "_use_cudnn_rnn_flatten_weight() -> bool",
    "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
    "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> "
    "Tensor",
    "_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float "
    "dropout_p=0.0, bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) -> "
    "(Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt "
    "max_k, Tensor rng_state, Tensor unused, Tensor debug_attn_mask)",
    "allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool "
    "equal_nan=False) -> bool",
    "_backward(Tensor self, Tensor[] inputs, Tensor? gradient=None, bool? retain_graph=None, bool "
    "create_graph=False) -> ()",
    "set_data(Tensor(a!) self, Tensor new_data) -> ()",
    "_unpack_dual(Tensor(a) dual, int level) -> (Tensor(a) primal, Tensor tangent)",
    "rename_(Tensor(a!) self, Dimname[]? names) -> Tensor(a!)",
    "contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
    "rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.3333333333333333, bool training=False, "
    "Generator? generator=None) -> Tensor",
    "rrelu_with_noise_(Tensor(a!) self, Tensor(b!) noise, Scalar lower=0.125, Scalar "
    "upper=0.3333333333333333, bool training=False, Generator? generator=None) -> Tensor(a!)",
    "gelu(Tensor self, *, str approximate='none') -> Tensor",
    "celu(Tensor self, Scalar alpha=1.0) -> Tensor",
    "rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor",
    "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
    "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
    "cudnn_affine_grid_generator(Tensor theta, int N, int C, int H, int W) -> Tensor grid",
    "_choose_qparams_per_tensor(Tensor self, bool reduce_range=False) -> (float, int)",
    "item(Tensor self) -> Scalar",
    "result_type.Tensor(Tensor tensor, Tensor other) -> ScalarType",
    "can_cast(ScalarType from_, ScalarType to) -> bool",
    "q_scale(Tensor self) -> float",
    "output_nr(Tensor self) -> int",
    "unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()",
    R"s(_test_string_default(Tensor dummy, str a="\"'\\", str b='"\'\\') -> Tensor)s",
    "fused_moving_avg_obs_fake_quant(Tensor self, Tensor observer_on, Tensor fake_quant_on, "
    "Tensor(a!) running_min, Tensor(b!) running_max, Tensor(c!) scale, Tensor(d!) zero_point, "
    "float averaging_const, int quant_min, int quant_max, int ch_axis, bool "
    "per_row_fake_quant=False, bool symmetric_quant=False) -> Tensor",
    "lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
    "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)",
    "lstm_mps_backward(Tensor? grad_y, Tensor? grad_hy, Tensor? grad_cy, Tensor z_state, Tensor "
    "cell_state_fwd, Tensor input, Tensor layersOutputs, Tensor[] hx, Tensor[] params, bool "
    "has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) "
    "-> (Tensor, Tensor[], Tensor[])",
    "segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, "
    "Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
    "pad_sequence(Tensor[] sequences, bool batch_first=False, float padding_value=0.0, str "
    "padding_side=\"right\") -> Tensor",
    "triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1.0, float "
    "p=2, float eps=1e-06, bool swap=False, int reduction=Mean) -> Tensor",
    "kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor",
    "aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) "
    "max) -> (Tensor(a!) min, Tensor(b!) max)",
    "cummax.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) "
    "values, Tensor(b!) indices)",
    "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
    "_sparse_semi_structured_tile(Tensor input, str algorithm=\"\", bool use_cutlass=True) -> "
    "(Tensor, Tensor, Tensor, Tensor, Tensor)",
    "_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, ScalarType? "
    "dtype=None, *, Device? device=None, Layout? layout=None) -> ()",
    "_resize_output_(Tensor(a!) self, SymInt[] size, Device device) -> Tensor(a!)",
    "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
    "_slow_conv2d_backward.grad_input(Tensor grad_output, Tensor self, Tensor weight, SymInt[2] "
    "kernel_size, SymInt[2] stride, SymInt[2] padding, *, Tensor(a!) grad_input, Tensor(b!) "
    "grad_weight, Tensor(c!) grad_bias) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
    "quantize_per_tensor.tensors(Tensor[] tensors, Tensor scales, Tensor zero_points, ScalarType "
    "dtype) -> Tensor[]",
    "repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? "
    "output_size=None) -> Tensor",
    "round.decimals(Tensor self, *, int decimals) -> Tensor",
    "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float "
    "eps=1e-05, bool cudnn_enabled=True) -> Tensor",
    "hinge_embedding_loss(Tensor self, Tensor target, float margin=1.0, int reduction=Mean) -> "
    "Tensor",
    "mm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype) -> Tensor",
    // From the 2.11 release's copy: the last base types the file uses (DeviceIndex, SymBool,
    // QScheme), and real uses of Scalar[], float[]?, Storage and Stream.
    "_cufft_get_plan_cache_size(DeviceIndex device_index) -> int",
    "_cufft_set_plan_cache_max_size(DeviceIndex device_index, int max_size) -> ()",
    "_cufft_clear_plan_cache(DeviceIndex device_index) -> ()",
    "sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> SymBool",
    "qscheme(Tensor self) -> QScheme",
    "gradient.scalarrayint(Tensor self, *, Scalar[] spacing, int? dim=None, int edge_order=1) -> "
    "Tensor[]",
    "histogram.bin_ct_out(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, "
    "bool density=False, Tensor(a!) hist, Tensor(b!) bin_edges) -> (Tensor(a!) hist, Tensor(b!) "
    "bin_edges)",
    "set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)",
    "record_stream(Tensor(a!) self, Stream s) -> ()",
};

// Parses `text`, prints it, re-parses the print and checks that nothing changed.
FunctionSchema expect_round_trip(std::string_view text) {
  FunctionSchema schema = parse_schema(text);
  std::string printed = schema.str();
  FunctionSchema again = parse_schema(printed);
  EXPECT_EQ(again, schema) << "printed as: " << printed;
  EXPECT_EQ(again.str(), printed) << "printing is not idempotent";
  return schema;
}

// Parses `text`, expecting a SchemaParseError; returns it for inspection.
SchemaParseError expect_parse_error(std::string_view text) {
  try {
    parse_schema(text);
  } catch (const SchemaParseError& e) {
    return e;
  }
  ADD_FAILURE() << "parse_schema accepted: " << text;
  return SchemaParseError("", 0);
}

// The entry of kNativeFunctions whose operator name (up to '(') is `name`.
const std::string& native(std::string_view name) {
  for (const std::string& text : kNativeFunctions) {
    if (text.starts_with(name) && text.size() > name.size() && text[name.size()] == '(') {
      return text;
    }
  }
  ADD_FAILURE() << "no native function " << name;
  static const std::string missing = "missing() -> ()";
  return missing;
}

const Argument& arg(const FunctionSchema& schema, std::string_view name) {
  auto index = schema.argument_index(name);
  EXPECT_TRUE(index.has_value()) << "no argument " << name << " in " << schema;
  static const Argument missing;
  return index ? schema.arguments()[*index] : missing;
}

// ---- real schemas ----

TEST(SchemaParser, RealNativeFunctionsParseAndRoundTrip) {
  ASSERT_GE(kNativeFunctions.size(), 40u);
  for (const std::string& text : kNativeFunctions) {
    SCOPED_TRACE(text);
    EXPECT_NO_THROW(expect_round_trip(text));
  }
}

TEST(SchemaParser, CanonicalSchemasPrintExactlyAsWritten) {
  // Schemas already in canonical form (no single quotes, no "1.0"-style floats, no "[0,1]")
  // print back byte for byte.
  for (const std::string& text : kNativeFunctions) {
    if (text.find('\'') != std::string::npos || text.find(".0") != std::string::npos ||
        text.find("[0,1]") != std::string::npos ||
        text.find("float scale=1,") != std::string::npos ||
        text.find("float p=2,") != std::string::npos) {
      continue;
    }
    EXPECT_EQ(parse_schema(text).str(), text);
  }
}

TEST(SchemaParser, AddTensorDetails) {
  FunctionSchema s = parse_schema(native("add.Tensor"));
  EXPECT_EQ(s.ns(), "");
  EXPECT_EQ(s.name(), "add");
  EXPECT_EQ(s.overload_name(), "Tensor");
  EXPECT_EQ(s.qualified_name(), "add.Tensor");
  ASSERT_EQ(s.arguments().size(), 3u);
  EXPECT_FALSE(s.arguments()[0].kwarg_only);
  EXPECT_FALSE(s.arguments()[1].kwarg_only);
  EXPECT_TRUE(s.arguments()[2].kwarg_only);
  EXPECT_EQ(s.arguments()[2].type, Type::of(TypeKind::Scalar));
  ASSERT_TRUE(s.arguments()[2].default_value.has_value());
  EXPECT_EQ(std::get<int64_t>(s.arguments()[2].default_value->value), 1);
  ASSERT_EQ(s.returns().size(), 1u);
  EXPECT_EQ(s.returns()[0].name, "");
  EXPECT_EQ(s.returns()[0].type, Type::tensor());
  EXPECT_FALSE(s.is_mutable());
  EXPECT_FALSE(s.is_vararg());
  EXPECT_FALSE(s.is_varret());

  s.set_ns("aten");
  EXPECT_EQ(s.qualified_name(), "aten::add.Tensor");
  EXPECT_EQ(s.str(), "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(parse_schema(s.str()), s);
  EXPECT_EQ(parse_schema(s.str()).ns(), "aten");
}

TEST(SchemaParser, InPlaceAndOutVariantsAreMutable) {
  FunctionSchema inplace = parse_schema(native("add_.Tensor"));
  EXPECT_EQ(inplace.name(), "add_");
  EXPECT_TRUE(inplace.is_mutable());
  const Argument& self = arg(inplace, "self");
  ASSERT_TRUE(self.alias.has_value());
  EXPECT_TRUE(self.alias->is_write);
  EXPECT_EQ(self.alias->before_set, std::vector<std::string>{"a"});
  EXPECT_EQ(self.alias->after_set, std::vector<std::string>{"a"});
  EXPECT_EQ(self.alias->str(), "(a!)");
  ASSERT_TRUE(inplace.returns()[0].alias.has_value());
  EXPECT_TRUE(inplace.returns()[0].alias->is_write);

  FunctionSchema out = parse_schema(native("add.out"));
  EXPECT_EQ(out.argument_index("out"), 3u);
  EXPECT_EQ(out.argument_index("nope"), std::nullopt);
  EXPECT_TRUE(arg(out, "out").kwarg_only);
  EXPECT_TRUE(arg(out, "alpha").kwarg_only);
  EXPECT_TRUE(out.is_mutable());
  EXPECT_EQ(arg(out, "out").str(), "Tensor(a!) out");
}

TEST(SchemaParser, Conv2dFixedSizeSymIntListsAndOptionalTensor) {
  FunctionSchema s = parse_schema(native("conv2d"));
  ASSERT_EQ(s.arguments().size(), 7u);
  const Argument& bias = arg(s, "bias");
  EXPECT_EQ(bias.type, Type::optional(Type::tensor()));
  EXPECT_TRUE(bias.type.is_tensor_like());
  EXPECT_TRUE(bias.default_value->is_none());
  const Argument& stride = arg(s, "stride");
  EXPECT_EQ(stride.type.kind, TypeKind::List);
  EXPECT_EQ(stride.type.fixed_size, 2);
  EXPECT_EQ(stride.type.element().kind, TypeKind::Int);
  EXPECT_TRUE(stride.type.element().symbolic);
  EXPECT_EQ(stride.type.str(), "SymInt[2]");
  // A scalar default of a fixed-size list stays a scalar (Note [Schema canonical form]).
  EXPECT_EQ(std::get<int64_t>(stride.default_value->value), 1);
  EXPECT_FALSE(stride.type.is_tensor_like());
  EXPECT_TRUE(arg(s, "groups").type.symbolic);
}

TEST(SchemaParser, MaxPoolEmptyListDefaultAndUnnamedTupleReturns) {
  FunctionSchema s = parse_schema(native("max_pool2d_with_indices"));
  EXPECT_EQ(std::get<std::vector<int64_t>>(arg(s, "stride").default_value->value),
            std::vector<int64_t>{});
  EXPECT_EQ(arg(s, "kernel_size").type, Type::list(Type::of(TypeKind::Int), 2));
  EXPECT_FALSE(std::get<bool>(arg(s, "ceil_mode").default_value->value));
  ASSERT_EQ(s.returns().size(), 2u);
  EXPECT_EQ(s.returns()[0].name, "");
  EXPECT_EQ(s.returns()[1].name, "");

  FunctionSchema out = parse_schema(native("max_pool2d_with_indices.out"));
  ASSERT_EQ(out.returns().size(), 2u);
  EXPECT_EQ(out.returns()[1].alias->before_set, std::vector<std::string>{"b"});
  EXPECT_TRUE(out.returns()[1].alias->is_write);
}

TEST(SchemaParser, SplitWildcardAliasAndAliasedListReturn) {
  FunctionSchema s = parse_schema(
      "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  const Argument& self = arg(s, "self");
  ASSERT_TRUE(self.alias.has_value());
  EXPECT_FALSE(self.alias->is_write);
  EXPECT_EQ(self.alias->before_set, std::vector<std::string>{"a"});
  EXPECT_EQ(self.alias->after_set, std::vector<std::string>{"*"});
  EXPECT_EQ(self.alias->str(), "(a -> *)");
  EXPECT_FALSE(s.is_mutable());
  const Argument& ret = s.returns()[0];
  EXPECT_EQ(ret.type, Type::list(Type::tensor()));
  EXPECT_TRUE(ret.type.is_tensor_like());
  EXPECT_EQ(ret.type_str(), "Tensor(a)[]");
  EXPECT_EQ(ret.type.str(), "Tensor[]");
}

TEST(SchemaParser, NamedReturns) {
  FunctionSchema max = parse_schema(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(max.returns().size(), 2u);
  EXPECT_EQ(max.returns()[0].name, "values");
  EXPECT_EQ(max.returns()[1].name, "indices");

  // Returns may reuse argument names (the out arguments they alias).
  FunctionSchema aminmax = parse_schema(
      "aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) "
      "max) -> (Tensor(a!) min, Tensor(b!) max)");
  EXPECT_EQ(aminmax.returns()[0].name, "min");
  EXPECT_EQ(aminmax.returns()[1].str(), "Tensor(b!) max");

  FunctionSchema dual =
      parse_schema("_unpack_dual(Tensor(a) dual, int level) -> (Tensor(a) primal, Tensor tangent)");
  EXPECT_EQ(dual.returns()[0].str(), "Tensor(a) primal");
  EXPECT_FALSE(dual.returns()[1].alias.has_value());

  // A lone named return prints without parentheses, as PyTorch does.
  FunctionSchema grid = parse_schema(
      "cudnn_affine_grid_generator(Tensor theta, int N, int C, int H, int W) -> Tensor grid");
  ASSERT_EQ(grid.returns().size(), 1u);
  EXPECT_EQ(grid.returns()[0].name, "grid");
  EXPECT_TRUE(grid.str().ends_with(") -> Tensor grid"));
}

TEST(SchemaParser, OptionalAndListNesting) {
  FunctionSchema index = parse_schema("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor");
  const Type& indices = arg(index, "indices").type;
  EXPECT_EQ(indices, Type::list(Type::optional(Type::tensor())));
  EXPECT_EQ(indices.str(), "Tensor?[]");
  EXPECT_TRUE(indices.is_tensor_like());

  FunctionSchema mean = parse_schema(
      "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor");
  const Type& dim = arg(mean, "dim").type;
  EXPECT_EQ(dim, Type::optional(Type::list(Type::of(TypeKind::Int), 1)));
  EXPECT_EQ(dim.str(), "int[1]?");
  EXPECT_FALSE(arg(mean, "dim").default_value.has_value());
  EXPECT_TRUE(arg(mean, "dtype").kwarg_only);
  EXPECT_EQ(arg(mean, "dtype").type, Type::optional(Type::of(TypeKind::ScalarType)));

  FunctionSchema names = parse_schema(
      "zeros.names(int[] size, *, Dimname[]? names, ScalarType? dtype=None, Layout? layout=None, "
      "Device? device=None, bool? pin_memory=None) -> Tensor");
  EXPECT_EQ(arg(names, "names").type.str(), "Dimname[]?");
  EXPECT_FALSE(arg(names, "names").default_value.has_value());  // optional without default is ok
  EXPECT_EQ(arg(names, "device").type, Type::optional(Type::of(TypeKind::Device)));

  FunctionSchema rnn = parse_schema(native("_cudnn_rnn_backward"));
  EXPECT_EQ(rnn.name(), "_cudnn_rnn_backward");
  EXPECT_EQ(arg(rnn, "output_mask").type, Type::list(Type::of(TypeKind::Bool), 4));
  EXPECT_EQ(rnn.returns().back().type, Type::list(Type::tensor()));
  EXPECT_EQ(arg(rnn, "batch_sizes").type.str(), "SymInt[]");
}

TEST(SchemaParser, AliasedListArgumentAndEmptyReturns) {
  FunctionSchema s =
      parse_schema("unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()");
  const Argument& out = arg(s, "out");
  EXPECT_EQ(out.type, Type::list(Type::tensor()));
  ASSERT_TRUE(out.alias.has_value());
  EXPECT_TRUE(out.alias->is_write);
  EXPECT_EQ(out.type_str(), "Tensor(a!)[]");
  EXPECT_TRUE(s.returns().empty());
  EXPECT_TRUE(s.is_mutable());
  EXPECT_TRUE(s.str().ends_with("-> ()"));

  FunctionSchema optional_alias = expect_round_trip("foo(Tensor(b!)? x) -> ()");
  EXPECT_EQ(arg(optional_alias, "x").type_str(), "Tensor(b!)?");
  EXPECT_EQ(optional_alias.str(), "foo(Tensor(b!)? x) -> ()");
}

TEST(SchemaParser, DefaultValueKinds) {
  FunctionSchema ce = parse_schema(
      "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
      "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor");
  EXPECT_EQ(std::get<Identifier>(arg(ce, "reduction").default_value->value).name, "Mean");
  EXPECT_EQ(std::get<int64_t>(arg(ce, "ignore_index").default_value->value), -100);
  EXPECT_EQ(std::get<double>(arg(ce, "label_smoothing").default_value->value), 0.0);

  FunctionSchema ln = parse_schema(native("layer_norm"));
  EXPECT_EQ(std::get<double>(arg(ln, "eps").default_value->value), 1e-05);
  EXPECT_TRUE(std::get<bool>(arg(ln, "cudnn_enable").default_value->value));

  FunctionSchema rot = parse_schema("rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor");
  EXPECT_EQ(std::get<std::vector<int64_t>>(arg(rot, "dims").default_value->value),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(rot.str(), "rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor");

  FunctionSchema gelu = parse_schema("gelu(Tensor self, *, str approximate='none') -> Tensor");
  EXPECT_EQ(std::get<std::string>(arg(gelu, "approximate").default_value->value), "none");
  EXPECT_EQ(gelu.str(), "gelu(Tensor self, *, str approximate=\"none\") -> Tensor");

  FunctionSchema quant = parse_schema(native("_empty_affine_quantized"));
  EXPECT_EQ(quant.name(), "_empty_affine_quantized");
  // `float scale=1`: an int literal for a float argument becomes the double 1.0.
  EXPECT_EQ(std::get<double>(arg(quant, "scale").default_value->value), 1.0);
  EXPECT_EQ(arg(quant, "scale").str(), "float scale=1.");
  EXPECT_EQ(std::get<int64_t>(arg(quant, "zero_point").default_value->value), 0);
  EXPECT_EQ(std::get<Identifier>(arg(quant, "memory_format").default_value->value).name,
            "contiguous_format");

  FunctionSchema rrelu = parse_schema(native("rrelu"));
  EXPECT_EQ(rrelu.name(), "rrelu");
  EXPECT_EQ(std::get<double>(arg(rrelu, "upper").default_value->value), 0.3333333333333333);
  EXPECT_EQ(arg(rrelu, "upper").str(), "Scalar upper=0.3333333333333333");

  FunctionSchema strings = parse_schema(
      R"s(_test_string_default(Tensor dummy, str a="\"'\\", str b='"\'\\') -> Tensor)s");
  EXPECT_EQ(std::get<std::string>(arg(strings, "a").default_value->value), "\"'\\");
  EXPECT_EQ(std::get<std::string>(arg(strings, "b").default_value->value), "\"'\\");
  EXPECT_EQ(arg(strings, "b").str(), R"s(str b="\"'\\")s");

  FunctionSchema tile = parse_schema(
      "_sparse_semi_structured_tile(Tensor input, str algorithm=\"\", bool use_cutlass=True) -> "
      "(Tensor, Tensor, Tensor, Tensor, Tensor)");
  EXPECT_EQ(std::get<std::string>(arg(tile, "algorithm").default_value->value), "");
}

TEST(SchemaParser, NonTensorReturnTypes) {
  FunctionSchema q = parse_schema(
      "_choose_qparams_per_tensor(Tensor self, bool reduce_range=False) -> (float, int)");
  ASSERT_EQ(q.returns().size(), 2u);
  EXPECT_EQ(q.returns()[0].type.kind, TypeKind::Float);
  EXPECT_EQ(q.returns()[1].type.kind, TypeKind::Int);
  EXPECT_EQ(parse_schema("item(Tensor self) -> Scalar").returns()[0].type.kind, TypeKind::Scalar);
  EXPECT_EQ(parse_schema("result_type.Tensor(Tensor tensor, Tensor other) -> ScalarType")
                .returns()[0]
                .type.kind,
            TypeKind::ScalarType);
  FunctionSchema flash = parse_schema(native("_scaled_dot_product_flash_attention"));
  EXPECT_EQ(flash.name(), "_scaled_dot_product_flash_attention");
  ASSERT_EQ(flash.returns().size(), 9u);
  EXPECT_EQ(flash.returns()[4].str(), "SymInt max_q");
  EXPECT_EQ(parse_schema("_use_cudnn_rnn_flatten_weight() -> bool").arguments().size(), 0u);
}

TEST(SchemaParser, NamespacesAndDunderNames) {
  FunctionSchema s = expect_round_trip("aten::__and__.Tensor(Tensor self, Tensor other) -> Tensor");
  EXPECT_EQ(s.ns(), "aten");
  EXPECT_EQ(s.name(), "__and__");
  EXPECT_EQ(s.overload_name(), "Tensor");
  EXPECT_EQ(s.qualified_name(), "aten::__and__.Tensor");
  EXPECT_EQ(s.operator_name(), (OperatorName{"aten", "__and__", "Tensor"}));

  FunctionSchema plain = expect_round_trip("myops::relu_(Tensor(a!) self) -> Tensor(a!)");
  EXPECT_EQ(plain.ns(), "myops");
  EXPECT_EQ(plain.overload_name(), "");
  EXPECT_EQ(plain.qualified_name(), "myops::relu_");

  // Overload names may start with a digit.
  EXPECT_EQ(parse_schema("foo.2d(Tensor x) -> Tensor").overload_name(), "2d");
}

TEST(SchemaParser, ParseOperatorNameAndType) {
  OperatorName name = parse_operator_name("aten::add.Tensor");
  EXPECT_EQ(name.ns, "aten");
  EXPECT_EQ(name.name, "add");
  EXPECT_EQ(name.overload_name, "Tensor");
  EXPECT_EQ(name.qualified_name(), "aten::add.Tensor");
  EXPECT_EQ(parse_operator_name(" add_ ").qualified_name(), "add_");
  EXPECT_THROW(parse_operator_name("add.Tensor(Tensor self)"), SchemaParseError);

  EXPECT_EQ(parse_type("Tensor?[]"), Type::list(Type::optional(Type::tensor())));
  EXPECT_EQ(parse_type("int[1]?").str(), "int[1]?");
  EXPECT_EQ(parse_type("SymInt[]").str(), "SymInt[]");
  EXPECT_EQ(parse_type("bool [ 4 ]").str(), "bool[4]");
  EXPECT_EQ(parse_type("complex").kind, TypeKind::Complex);
  EXPECT_THROW(parse_type("Tensor(a)"), SchemaParseError);
  EXPECT_THROW(parse_type("Tensor x"), SchemaParseError);
}

TEST(SchemaParser, VarargsAndVarrets) {
  FunctionSchema s = expect_round_trip("foo(Tensor a, ...) -> ...");
  EXPECT_TRUE(s.is_vararg());
  EXPECT_TRUE(s.is_varret());
  EXPECT_EQ(s.arguments().size(), 1u);
  EXPECT_TRUE(s.returns().empty());
  EXPECT_EQ(s.str(), "foo(Tensor a, ...) -> ...");

  FunctionSchema t = expect_round_trip("bar(...) -> (Tensor, ...)");
  EXPECT_TRUE(t.is_vararg());
  EXPECT_TRUE(t.arguments().empty());
  EXPECT_EQ(t.returns().size(), 1u);
  EXPECT_EQ(t.str(), "bar(...) -> (Tensor, ...)");
}

TEST(SchemaParser, TypeHelpers) {
  EXPECT_TRUE(Type::tensor().is_tensor_like());
  EXPECT_TRUE(Type::optional(Type::tensor()).is_tensor_like());
  EXPECT_TRUE(Type::list(Type::tensor()).is_tensor_like());
  EXPECT_TRUE(Type::list(Type::optional(Type::tensor())).is_tensor_like());
  EXPECT_FALSE(Type::of(TypeKind::Int).is_tensor_like());
  EXPECT_FALSE(Type::list(Type::of(TypeKind::Int), 2).is_tensor_like());
  EXPECT_FALSE(Type::of(TypeKind::Scalar).is_tensor_like());

  EXPECT_EQ(Type::sym_int(), Type::of(TypeKind::Int));  // SymInt == int
  EXPECT_EQ(Type::sym_int().str(), "SymInt");
  EXPECT_NE(Type::list(Type::of(TypeKind::Int), 2), Type::list(Type::of(TypeKind::Int)));
  EXPECT_NE(Type::list(Type::of(TypeKind::Int)), Type::list(Type::of(TypeKind::Float)));
  EXPECT_EQ(Type::list(Type::of(TypeKind::Bool), 4).str(), "bool[4]");
  EXPECT_EQ(Type::optional(Type::list(Type::of(TypeKind::Float))).str(), "float[]?");

  // Copies share the element rather than copying it.
  Type a = Type::list(Type::tensor());
  Type b = a;
  EXPECT_EQ(a.elem.get(), b.elem.get());
}

TEST(SchemaParser, SymIntEqualsIntButPrintsBack) {
  FunctionSchema sym = parse_schema("foo(SymInt[1] a, SymInt b) -> SymInt");
  FunctionSchema plain = parse_schema("foo(int[1] a, int b) -> int");
  EXPECT_EQ(sym, plain);
  EXPECT_EQ(sym.str(), "foo(SymInt[1] a, SymInt b) -> SymInt");
  EXPECT_EQ(plain.str(), "foo(int[1] a, int b) -> int");
}

TEST(SchemaParser, DeviceIndexSymBoolAndQScheme) {
  // DeviceIndex is an int and SymBool a bool that print back as written; QScheme is its own kind.
  FunctionSchema cache = parse_schema(native("_cufft_set_plan_cache_max_size"));
  const Type& index = arg(cache, "device_index").type;
  EXPECT_EQ(index.kind, TypeKind::Int);
  EXPECT_TRUE(index.device_index);
  EXPECT_FALSE(index.symbolic);
  EXPECT_EQ(cache, parse_schema("_cufft_set_plan_cache_max_size(int device_index, int max_size) "
                                "-> ()"));
  EXPECT_EQ(cache.str(), native("_cufft_set_plan_cache_max_size"));

  FunctionSchema contiguous = parse_schema(native("sym_is_contiguous"));
  EXPECT_EQ(contiguous.returns()[0].type.kind, TypeKind::Bool);
  EXPECT_TRUE(contiguous.returns()[0].type.symbolic);
  EXPECT_EQ(contiguous.returns()[0].str(), "SymBool");

  FunctionSchema qscheme = parse_schema(native("qscheme"));
  EXPECT_EQ(qscheme.returns()[0].type.kind, TypeKind::QScheme);
  EXPECT_EQ(qscheme.str(), "qscheme(Tensor self) -> QScheme");

  EXPECT_EQ(Type::device_index_type(), Type::of(TypeKind::Int));
  EXPECT_EQ(Type::device_index_type().str(), "DeviceIndex");
  EXPECT_EQ(Type::sym_bool(), Type::of(TypeKind::Bool));
  EXPECT_EQ(Type::sym_bool().str(), "SymBool");
  EXPECT_NE(Type::of(TypeKind::QScheme), Type::of(TypeKind::Int));
  EXPECT_EQ(parse_type("DeviceIndex?").str(), "DeviceIndex?");
  EXPECT_EQ(parse_type("SymBool[]").str(), "SymBool[]");
  EXPECT_EQ(parse_type("QScheme[2]?").str(), "QScheme[2]?");
}

TEST(SchemaParser, AliasAnnotationForms) {
  FunctionSchema s = expect_round_trip(
      "foo(Tensor(a|b) x, Tensor( c ! ) y, Tensor(*) z, Tensor(d! -> d|e) w) -> Tensor(a|b)");
  EXPECT_EQ(arg(s, "x").alias->before_set, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(arg(s, "x").alias->str(), "(a|b)");
  EXPECT_EQ(arg(s, "y").alias->str(), "(c!)");
  EXPECT_EQ(arg(s, "z").alias->str(), "(*)");
  EXPECT_EQ(arg(s, "w").alias->str(), "(d! -> d|e)");
  EXPECT_EQ(s.str(),
            "foo(Tensor(a|b) x, Tensor(c!) y, Tensor(*) z, Tensor(d! -> d|e) w) -> Tensor(a|b)");
  // Alias sets are sets: order does not matter for equality.
  EXPECT_EQ(parse_schema("f(Tensor(a|b) x) -> ()"), parse_schema("f(Tensor(b|a) x) -> ()"));
  EXPECT_NE(parse_schema("f(Tensor(a) x) -> ()"), parse_schema("f(Tensor(a!) x) -> ()"));
}

TEST(SchemaParser, WhitespaceIsNormalised) {
  FunctionSchema s = expect_round_trip(
      "  aten::add.Tensor ( Tensor self ,Tensor other , * , Scalar alpha = 1 )->Tensor  ");
  EXPECT_EQ(s.str(), "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  FunctionSchema t = expect_round_trip(
      "max.dim(\n    Tensor self,\n\tint dim,\n    bool keepdim=False)\n  -> ( Tensor values , "
      "Tensor indices )");
  EXPECT_EQ(t.str(),
            "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  // `(Tensor)` is one return and prints bare.
  EXPECT_EQ(parse_schema("f(Tensor a) -> (Tensor)").str(), "f(Tensor a) -> Tensor");
  EXPECT_EQ(parse_schema("f() -> ( )").str(), "f() -> ()");
}

// ---- canonical printing of defaults ----

TEST(SchemaPrinter, FloatDefaultsRoundTripExactlyAndStayFloats) {
  FunctionSchema s = expect_round_trip(
      "foo(float a=1e-05, float b=0.5, float c=1., Scalar d=1, Scalar e=1.0, float f=2, "
      "float g=1e-08, Scalar h=-0.25, float i=1E5, float j=2.5e-3) -> Tensor");
  EXPECT_EQ(s.str(),
            "foo(float a=1e-05, float b=0.5, float c=1., Scalar d=1, Scalar e=1., float f=2., "
            "float g=1e-08, Scalar h=-0.25, float i=1e+05, float j=0.0025) -> Tensor");
  EXPECT_EQ(std::get<double>(arg(s, "a").default_value->value), 1e-05);
  EXPECT_EQ(std::get<double>(arg(s, "c").default_value->value), 1.0);
  EXPECT_EQ(std::get<int64_t>(arg(s, "d").default_value->value), 1);   // "1" stays an int
  EXPECT_EQ(std::get<double>(arg(s, "e").default_value->value), 1.0);  // "1.0" stays a double
  EXPECT_EQ(std::get<double>(arg(s, "f").default_value->value), 2.0);  // int literal, float arg
}

TEST(SchemaPrinter, DoubleFormatting) {
  auto text = [](double d) { return DefaultValue{d}.str(); };
  EXPECT_EQ(text(1e-05), "1e-05");
  EXPECT_EQ(text(0.5), "0.5");
  EXPECT_EQ(text(1.0), "1.");
  EXPECT_EQ(text(0.0), "0.");
  EXPECT_EQ(text(-0.0), "-0.");
  EXPECT_EQ(text(10.0), "10.");
  EXPECT_EQ(text(0.1), "0.1");
  EXPECT_EQ(text(1e20), "1e+20");
  EXPECT_EQ(text(-1.5), "-1.5");
  EXPECT_EQ(text(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(text(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(text(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(DefaultValue{int64_t{1}}.str(), "1");
  EXPECT_EQ(DefaultValue{int64_t{-100}}.str(), "-100");
}

TEST(SchemaPrinter, RandomDoublesRoundTripBitForBit) {
  std::mt19937_64 rng(20240607);
  for (int i = 0; i < 2000; ++i) {
    double d = std::bit_cast<double>(rng());
    if (!std::isfinite(d)) continue;
    std::string text = DefaultValue{d}.str();
    FunctionSchema s = parse_schema("f(float x=" + text + ") -> ()");
    double back = std::get<double>(s.arguments()[0].default_value->value);
    EXPECT_EQ(std::bit_cast<uint64_t>(back), std::bit_cast<uint64_t>(d)) << text;
    EXPECT_NE(text.find_first_of(".e"), std::string::npos) << text;
  }
}

TEST(SchemaPrinter, InfinityAndNan) {
  FunctionSchema s = expect_round_trip("foo(float a=inf, float b=-inf, float c=nan) -> Tensor");
  EXPECT_EQ(s.str(), "foo(float a=inf, float b=-inf, float c=nan) -> Tensor");
  EXPECT_TRUE(std::isinf(std::get<double>(arg(s, "a").default_value->value)));
  EXPECT_LT(std::get<double>(arg(s, "b").default_value->value), 0);
  EXPECT_TRUE(std::isnan(std::get<double>(arg(s, "c").default_value->value)));
}

TEST(SchemaPrinter, StringsAreDoubleQuotedWithEscapes) {
  FunctionSchema s = expect_round_trip(
      R"s(foo(str a='mean', str b="constant", str c="it's \"q\"\n\t\\", str d='\x01') -> ())s");
  EXPECT_EQ(std::get<std::string>(arg(s, "c").default_value->value), "it's \"q\"\n\t\\");
  EXPECT_EQ(std::get<std::string>(arg(s, "d").default_value->value), "\x01");
  EXPECT_EQ(
      s.str(),
      R"s(foo(str a="mean", str b="constant", str c="it's \"q\"\n\t\\", str d="\x01") -> ())s");
}

TEST(SchemaPrinter, ListDefaults) {
  FunctionSchema s = expect_round_trip(
      "foo(int[] a=[], int[] b=[0,1], int[2] c=[1, 1], float[] d=[1, 2.5], bool[3] "
      "e=[True, False, True], float[] f=[], bool[2] g=[], int[] h=[-1, -2]) -> Tensor");
  EXPECT_EQ(s.str(),
            "foo(int[] a=[], int[] b=[0, 1], int[2] c=[1, 1], float[] d=[1., 2.5], bool[3] "
            "e=[True, False, True], float[] f=[], bool[2] g=[], int[] h=[-1, -2]) -> Tensor");
  EXPECT_EQ(std::get<std::vector<double>>(arg(s, "d").default_value->value),
            (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(std::get<std::vector<bool>>(arg(s, "e").default_value->value),
            (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(std::get<std::vector<double>>(arg(s, "f").default_value->value).empty());
  EXPECT_TRUE(std::get<std::vector<bool>>(arg(s, "g").default_value->value).empty());
  // An int list given to a float list argument becomes doubles.
  FunctionSchema t = parse_schema("foo(float[] x=[1, 2]) -> Tensor");
  EXPECT_EQ(std::get<std::vector<double>>(arg(t, "x").default_value->value),
            (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(t.str(), "foo(float[] x=[1., 2.]) -> Tensor");
}

TEST(SchemaPrinter, IdentifierDefaults) {
  FunctionSchema s = expect_round_trip(
      "foo(int reduction=Mean, MemoryFormat memory_format=contiguous_format, ScalarType "
      "dtype=long, Layout layout=strided) -> Tensor");
  EXPECT_EQ(std::get<Identifier>(arg(s, "dtype").default_value->value).name, "long");
  EXPECT_EQ(s.str(),
            "foo(int reduction=Mean, MemoryFormat memory_format=contiguous_format, ScalarType "
            "dtype=long, Layout layout=strided) -> Tensor");
}

TEST(SchemaPrinter, EqualityDistinguishesDefaults) {
  EXPECT_NE(parse_schema("f(Scalar a=1) -> ()"), parse_schema("f(Scalar a=1.) -> ()"));
  EXPECT_NE(parse_schema("f(Scalar a=1) -> ()"), parse_schema("f(Scalar a=2) -> ()"));
  EXPECT_NE(parse_schema("f(Scalar a=1) -> ()"), parse_schema("f(Scalar a) -> ()"));
  EXPECT_NE(parse_schema("f(Tensor a, *, Tensor b) -> ()"),
            parse_schema("f(Tensor a, Tensor b) -> ()"));
  EXPECT_NE(parse_schema("f.x(Tensor a) -> ()"), parse_schema("f.y(Tensor a) -> ()"));
  EXPECT_NE(parse_schema("f(Tensor a) -> ()"), parse_schema("f(Tensor b) -> ()"));
  EXPECT_EQ(parse_schema("f(float a=nan) -> ()"), parse_schema("f(float a=nan) -> ()"));
}

// ---- defaults must fit their argument's type ----

TEST(SchemaParser, RealDefaultPatternsFitTheirTypes) {
  // Every (type, default) shape native_functions.yaml uses, one schema each.
  const std::vector<std::string> cases = {
      "f(Scalar alpha=1) -> ()",
      "f(Scalar alpha=1.0) -> ()",
      "f(Scalar negative_slope=-1) -> ()",
      "f(Scalar? correction=None) -> ()",
      "f(SymInt[2] stride=1) -> ()",
      "f(int[3] padding=0) -> ()",
      "f(int[1] dim=[]) -> ()",
      "f(int[1] dim=[-2,-1]) -> ()",
      "f(int[2] stride=[]) -> ()",
      "f(SymInt[] size=[]) -> ()",
      "f(int[] dims=[0,1]) -> ()",
      "f(SymInt[1]? s=None) -> ()",
      "f(float[]? scales=None) -> ()",
      "f(int reduction=Mean) -> ()",
      "f(int reduction=Sum) -> ()",
      "f(SymInt ignore_index=-100) -> ()",
      "f(int? dim=None) -> ()",
      "f(int? size=0) -> ()",
      "f(ScalarType? dtype=long) -> ()",
      "f(ScalarType? dtype=None) -> ()",
      "f(MemoryFormat memory_format=contiguous_format) -> ()",
      "f(MemoryFormat? memory_format=contiguous_format) -> ()",
      "f(MemoryFormat? memory_format=None) -> ()",
      "f(Layout? layout=None) -> ()",
      "f(str reduce=\"mean\") -> ()",
      "f(str ord='fro') -> ()",
      "f(str algorithm=\"\") -> ()",
      "f(str? rounding_mode=None) -> ()",
      "f(float eps=1e-05) -> ()",
      "f(float p=2) -> ()",
      "f(float label_smoothing=0.0) -> ()",
      "f(float? scale=None) -> ()",
      "f(bool keepdim=False) -> ()",
      "f(bool? pin_memory=None) -> ()",
      "f(bool? pin_memory=False) -> ()",
      "f(Generator? generator=None) -> ()",
      "f(Device? device=None) -> ()",
      "f(Tensor? weight=None) -> ()",
      "f(Tensor(a!)? out=None) -> ()",
      "f(Dimname[]? names=None) -> ()",
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE(text);
    EXPECT_NO_THROW(expect_round_trip(text));
  }
}

TEST(SchemaParser, OtherDefaultsThatFit) {
  const std::vector<std::string> cases = {
      "f(bool[3] output_mask=[True, True, True]) -> ()",
      "f(bool[2] mask=[]) -> ()",
      "f(float[] x=[1, 2.5]) -> ()",
      "f(float[] x=[]) -> ()",
      "f(int[2]? pair=1) -> ()",
      "f(Scalar flag=True) -> ()",
      "f(float x=inf, float y=-inf, float z=nan) -> ()",
      "f(complex c=1, complex d=0.5) -> ()",
      "f(ScalarType dtype=float32, ScalarType other=float) -> ()",
      "f(Layout layout=strided, Layout? other=sparse_coo) -> ()",
      "f(MemoryFormat m=channels_last, MemoryFormat n=preserve_format) -> ()",
      "f(SymBool b=True, DeviceIndex i=-1) -> ()",
      "f(Any a=None, Any b=1, Any c=\"x\") -> ()",
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE(text);
    EXPECT_NO_THROW(expect_round_trip(text));
  }
}

TEST(SchemaParser, FixedSizeIntListKeepsItsSingleIntDefault) {
  FunctionSchema s = parse_schema("f(SymInt[2] stride=1, int[2]? pair=3) -> ()");
  EXPECT_EQ(std::get<int64_t>(arg(s, "stride").default_value->value), 1);
  EXPECT_EQ(std::get<int64_t>(arg(s, "pair").default_value->value), 3);
  FunctionSchema mask = parse_schema("f(bool[3] output_mask=[True, False, True]) -> ()");
  EXPECT_EQ(std::get<std::vector<bool>>(arg(mask, "output_mask").default_value->value),
            (std::vector<bool>{true, false, true}));
}

TEST(SchemaParser, EveryNativeFunctionDefaultFits) {
  // The real lines above include every kind of default the yaml file has; none may be refused.
  for (const std::string& text : kNativeFunctions) {
    SCOPED_TRACE(text);
    EXPECT_NO_THROW(parse_schema(text));
  }
}

TEST(FunctionSchema, ConstructorRejectsPositionalAfterKeywordOnly) {
  Argument a{"a", Type::tensor(), std::nullopt, std::nullopt, /*kwarg_only=*/true};
  Argument b{"b", Type::tensor(), std::nullopt, std::nullopt, /*kwarg_only=*/false};
  EXPECT_THROW(FunctionSchema("", "f", "", {a, b}, {}), ValueError);
  Argument ret{"", Type::tensor(), std::nullopt, DefaultValue{}, false};
  EXPECT_THROW(FunctionSchema("", "f", "", {}, {ret}), ValueError);
  Argument aliased_int{"n", Type::of(TypeKind::Int), AliasInfo{{"a"}, {"a"}, false}, std::nullopt,
                       false};
  EXPECT_THROW(FunctionSchema("", "f", "", {aliased_int}, {}), ValueError);

  FunctionSchema ok("aten", "f", "out", {b, a}, {Argument("", Type::tensor())});
  EXPECT_EQ(ok.str(), "aten::f.out(Tensor b, *, Tensor a) -> Tensor");
  EXPECT_EQ(parse_schema(ok.str()), ok);
}

// ---- errors ----

struct BadSchema {
  std::string text;
  int column;
  std::string message;
};

TEST(SchemaParserErrors, ColumnAndMessage) {
  const std::vector<BadSchema> cases = {
      {"add.Tensor(Tensor self x)", 24, "expected ')' or ',' after argument, found 'x'"},
      {"add(Tnsor self) -> Tensor", 5, "unknown type 'Tnsor'; did you mean 'Tensor'?"},
      {"foo(double x) -> Tensor", 5, "unknown type 'double'; did you mean 'float'?"},
      {"qscheme(Tensor self) -> Qscheme", 25, "unknown type 'Qscheme'; did you mean 'QScheme'?"},
      {"relu(Tensor self) Tensor", 19, "expected '->' after the argument list, found 'Tensor'"},
      {"relu(Tensor self)", 18, "expected '->' after the argument list, found end of input"},
      {"relu(Tensor self) -> Tensor out junk", 33,
       "expected end of schema after the returns, found 'junk'"},
      {"add(Tensor self, Tensor self) -> Tensor", 25, "duplicate argument name 'self'"},
      {"f(Tensor a) -> (Tensor x, Tensor x)", 34, "duplicate return name 'x'"},
      {"pad(Tensor self, str mode=\"constant) -> Tensor", 27, "unterminated string literal"},
      {"pad(Tensor self, str mode='constant", 27, "unterminated string literal"},
      {"abs_(Tensor(a self) -> Tensor", 15,
       "expected ')' to close the alias annotation, found 'self'"},
      {"abs_(Tensor() self) -> Tensor", 13,
       "expected an alias set name or '*' in the alias annotation, found ')'"},
      {"abs_(Tensor(a|) self) -> Tensor", 15, "expected an alias set name or '*'"},
      {"foo(int(a) x) -> Tensor", 8, "alias annotations are only allowed on Tensor, not on 'int'"},
      {"", 1, "expected operator name, found end of input"},
      {"   ", 4, "expected operator name, found end of input"},
      {"foo(Tensor self) -> Tensor out=None", 31, "return values cannot have default values"},
      {"foo(Tensor a, *, int b, *, int c) -> Tensor", 25,
       "'*' may appear only once in an argument list"},
      {"foo(Tensor a, *) -> Tensor", 15, "expected a keyword-only argument after '*'"},
      {"foo(..., Tensor a) -> Tensor", 8, "'...' must be the last argument"},
      {"foo(Tensor) -> Tensor", 11, "expected an argument name after type 'Tensor', found ')'"},
      {"foo(Tensor(a!)[] , int x) -> Tensor", 18,
       "expected an argument name after type 'Tensor(a!)[]', found ','"},
      {"foo(Tensor a,) -> Tensor", 14, "expected an argument type, found ')'"},
      {"foo(int[2 x) -> Tensor", 11, "expected ']' after the list size, found 'x'"},
      {"foo(int[x] y) -> Tensor", 9, "expected a list size or ']', found 'x'"},
      {"foo(int[0] x) -> Tensor", 9, "list size must be a positive integer, found '0'"},
      {"foo(int?? x) -> Tensor", 9, "type is already optional"},
      {"foo(int x=12abc) -> Tensor", 11, "malformed number '12abc'"},
      {"foo(float x=1.2.3) -> Tensor", 13, "malformed number '1.2.3'"},
      {"foo(float x=1e) -> Tensor", 15, "expected exponent digits in the number, found ')'"},
      {"foo(int x=-) -> Tensor", 12, "expected a digit after '-', found ')'"},
      {"foo(int x=99999999999999999999) -> Tensor", 11,
       "integer literal '99999999999999999999' is out of range for int64"},
      {"foo(float x=1e999) -> Tensor", 13, "float literal '1e999' is out of range for a double"},
      {"foo(str s=\"a\\qb\") -> Tensor", 13, "unknown escape sequence '\\q' in string literal"},
      {"foo(int[] x=[1, True]) -> Tensor", 13, "list default mixes booleans and numbers"},
      {"foo(int[] x=[1 2]) -> Tensor", 16, "expected ',' or ']' in the list default, found '2'"},
      {"foo(int[] x=[a]) -> Tensor", 14, "expected a number or boolean in the list default"},
      {"foo(int x=) -> Tensor", 11, "expected a default value, found ')'"},
      {"foo Tensor", 5, "expected '(' after operator name, found 'Tensor'"},
      {"foo.(Tensor a) -> Tensor", 5, "expected overload name after '.', found '('"},
      {"aten::(Tensor a) -> Tensor", 7, "expected operator name after '::', found '('"},
      {"foo(Tensor a", 13, "expected ')' or ',' after argument, found end of input"},
      {"foo(Tensor a) ->", 17, "expected a return type, found end of input"},
      {"foo(Tensor a) -> (Tensor, *)", 27, "'*' (keyword-only marker) is not allowed in returns"},
      {"foo(Tensor a) -> (..., Tensor)", 22, "'...' must be the last return"},
      {"foo(Tensor a) -> (Tensor b c)", 28, "expected ')' or ',' after return, found 'c'"},
  };
  ASSERT_GE(cases.size(), 15u);
  for (const BadSchema& bad : cases) {
    SCOPED_TRACE(bad.text);
    SchemaParseError e = expect_parse_error(bad.text);
    EXPECT_EQ(e.column(), bad.column);
    EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at column " + std::to_string(bad.column) + ":"),
              std::string::npos)
        << e.what();
  }
}

TEST(SchemaParserErrors, DefaultThatDoesNotFitItsType) {
  const std::vector<BadSchema> cases = {
      {"f(Tensor x, bool b=1) -> Tensor", 20, "default value 1 does not fit type 'bool'"},
      {"f(Tensor x, int a=1.5) -> Tensor", 19, "default value 1.5 does not fit type 'int'"},
      {"f(Tensor x, Tensor y=1) -> Tensor", 22, "default value 1 does not fit type 'Tensor'"},
      {"f(Tensor x, str s=2) -> Tensor", 19, "default value 2 does not fit type 'str'"},
      {"f(Tensor x, int[] d=[1.5]) -> Tensor", 21, "default value [1.5] does not fit type 'int[]'"},
      {"f(int a=True) -> ()", 9, "default value True does not fit type 'int'"},
      {"f(int a=inf) -> ()", 9, "default value inf does not fit type 'int'"},
      {"f(SymInt k=2.) -> ()", 12, "default value 2. does not fit type 'SymInt'"},
      {"f(int a=\"1\") -> ()", 9, "default value \"1\" does not fit type 'int'"},
      {"f(float a=True) -> ()", 11, "default value True does not fit type 'float'"},
      {"f(float a=\"x\") -> ()", 11, "default value \"x\" does not fit type 'float'"},
      {"f(bool b=0) -> ()", 10, "default value 0 does not fit type 'bool'"},
      {"f(bool? b=1) -> ()", 11, "default value 1 does not fit type 'bool?'"},
      {"f(Scalar s=\"1\") -> ()", 12, "default value \"1\" does not fit type 'Scalar'"},
      {"f(str s=mean) -> ()", 9, "default value mean does not fit type 'str'"},
      {"f(ScalarType d=1) -> ()", 16, "default value 1 does not fit type 'ScalarType'"},
      {"f(Tensor? x=0) -> ()", 13, "default value 0 does not fit type 'Tensor?'"},
      {"f(Device d=\"cpu\") -> ()", 12, "default value \"cpu\" does not fit type 'Device'"},
      {"f(Dimname n=\"x\") -> ()", 13, "default value \"x\" does not fit type 'Dimname'"},
      {"f(int[] d=[True]) -> ()", 11, "default value [True] does not fit type 'int[]'"},
      {"f(SymInt[2] s=[1.0, 2.0]) -> ()", 15,
       "default value [1.0, 2.0] does not fit type 'SymInt[2]'"},
      {"f(bool[3] m=[1, 0, 1]) -> ()", 13, "default value [1, 0, 1] does not fit type 'bool[3]'"},
      {"f(int[2] x=1.5) -> ()", 12, "default value 1.5 does not fit type 'int[2]'"},
      {"f(int[1]? d=\"x\") -> ()", 13, "default value \"x\" does not fit type 'int[1]?'"},
      {"f(Tensor[] t=[]) -> ()", 14,
       "default value [] does not fit type 'Tensor[]'; only lists of int, float or bool take a "
       "default other than None"},
      {"f(Tensor?[] t=[]) -> ()", 15, "default value [] does not fit type 'Tensor?[]'"},
      {"f(Tensor self,\n  int a=1.5) -> ()", 24, "default value 1.5 does not fit type 'int'"},
  };
  for (const BadSchema& bad : cases) {
    SCOPED_TRACE(bad.text);
    SchemaParseError e = expect_parse_error(bad.text);
    EXPECT_EQ(e.column(), bad.column);
    EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
  }
}

TEST(SchemaParserErrors, NoneNeedsAnOptionalType) {
  const std::vector<BadSchema> cases = {
      {"f(Tensor x, Tensor y=None) -> Tensor", 22,
       "default value None does not fit type 'Tensor'; only an optional type defaults to None "
       "(write 'Tensor?')"},
      {"f(Tensor(a) x=None) -> ()", 15, "(write 'Tensor(a)?')"},
      {"f(Generator g=None) -> ()", 15, "(write 'Generator?')"},
      {"f(bool b=None) -> ()", 10, "(write 'bool?')"},
      {"f(Scalar s=None) -> ()", 12, "(write 'Scalar?')"},
      {"f(str s=None) -> ()", 9, "(write 'str?')"},
      {"f(int[] d=None) -> ()", 11, "(write 'int[]?')"},
      {"f(int[2] d=None) -> ()", 12, "(write 'int[2]?')"},
  };
  for (const BadSchema& bad : cases) {
    SCOPED_TRACE(bad.text);
    SchemaParseError e = expect_parse_error(bad.text);
    EXPECT_EQ(e.column(), bad.column);
    EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
  }
}

TEST(SchemaParserErrors, EnumDefaultsNameTheAcceptedIdentifiers) {
  const std::vector<BadSchema> cases = {
      {"f(int r=Man) -> ()", 9, "default for int is one of Mean, Sum"},
      {"f(int r=contiguous_format) -> ()", 9, "default for int is one of Mean, Sum"},
      {"f(ScalarType d=cfloat) -> ()", 16, "a dtype name such as long or float32"},
      {"f(Layout l=contiguous_format) -> ()", 12,
       "default for Layout is one of strided, sparse_coo"},
      {"f(MemoryFormat? m=strided) -> ()", 19,
       "default for MemoryFormat is one of contiguous_format, preserve_format, channels_last, "
       "channels_last_3d"},
  };
  for (const BadSchema& bad : cases) {
    SCOPED_TRACE(bad.text);
    SchemaParseError e = expect_parse_error(bad.text);
    EXPECT_EQ(e.column(), bad.column);
    EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
  }
}

TEST(SchemaParserErrors, SingleValueOnlyForFixedSizeIntLists) {
  const std::vector<BadSchema> cases = {
      {"f(int[] d=1) -> ()", 11, "does not fit type 'int[]'; only a fixed-size int list"},
      {"f(bool[3] m=True) -> ()", 13, "does not fit type 'bool[3]'; only a fixed-size int list"},
      {"f(float[2] x=1.5) -> ()", 14, "does not fit type 'float[2]'; only a fixed-size int list"},
  };
  for (const BadSchema& bad : cases) {
    SCOPED_TRACE(bad.text);
    SchemaParseError e = expect_parse_error(bad.text);
    EXPECT_EQ(e.column(), bad.column);
    EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
  }
}

TEST(SchemaParserErrors, DefaultMismatchMessageShowsCaret) {
  SchemaParseError e = expect_parse_error("f(Tensor x, int a=1.5) -> Tensor");
  EXPECT_EQ(std::string(e.what()),
            "schema parse error at column 19: default value 1.5 does not fit type 'int'\n"
            "  f(Tensor x, int a=1.5) -> Tensor\n"
            "  " +
                std::string(18, ' ') + "^");
}

TEST(SchemaParserErrors, MessageShowsSchemaWithCaret) {
  SchemaParseError e = expect_parse_error("add.Tensor(Tensor self x)");
  EXPECT_EQ(std::string(e.what()),
            "schema parse error at column 24: expected ')' or ',' after argument, found 'x'\n"
            "  add.Tensor(Tensor self x)\n"
            "  " +
                std::string(23, ' ') + "^");
  const Error& base = e;  // callers can catch every Loom error alike
  EXPECT_NE(std::string(base.what()).find("column 24"), std::string::npos);
}

TEST(SchemaParserErrors, MultiLineSchemaKeepsCaretAligned) {
  // Newlines and tabs count as one column each and are echoed as spaces.
  SchemaParseError e = expect_parse_error("foo(Tensor a,\n\tTensor a) -> Tensor");
  EXPECT_EQ(e.column(), 23);
  EXPECT_EQ(std::string(e.what()),
            "schema parse error at column 23: duplicate argument name 'a'\n"
            "  foo(Tensor a,  Tensor a) -> Tensor\n"
            "  " +
                std::string(22, ' ') + "^");
}

// ---- hostile input: `loom schema check` and the C ABI's LibraryDef parse whatever they get ----

std::string repeat(std::string_view piece, size_t n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (size_t i = 0; i < n; ++i) out += piece;
  return out;
}

TEST(SchemaParserHostile, TypeNestingIsCappedWhereverTypesAppear) {
  // Each of these used to overflow the stack printing or destroying the type (it recursed
  // once per layer); now the ninth layer is a parse error at its column.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"f(Tensor", " x) -> Tensor"},      // an argument
      {"f(Tensor x) -> Tensor", ""},      // a bare return
      {"f(Tensor x) -> (Tensor", " y)"},  // a tuple return
      {"f(Tensor(a!)", " x) -> Tensor"},  // after an alias annotation
  };
  for (const auto& [head, tail] : cases) {
    for (const std::string_view layer : {"[]", "?[]", "[2]"}) {
      const std::string text = head + repeat(layer, 40000) + tail;
      SCOPED_TRACE(head + " " + std::string(layer));
      SchemaParseError e = expect_parse_error(text);
      // The ninth layer starts after eight: eight '[]' (or '[2]'), or four '?[]'.
      const size_t eight = layer == "?[]" ? 4 * layer.size() : 8 * layer.size();
      EXPECT_EQ(e.column(), static_cast<int>(head.size() + eight) + 1) << e.what();
      EXPECT_NE(std::string(e.what()).find("type nests lists and optionals more than 8 deep"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(parse_type("int" + repeat("[]", 100000)), SchemaParseError);
  EXPECT_THROW(parse_type("int" + repeat("?[] ", 100000)), SchemaParseError);
}

TEST(SchemaParserHostile, EightLayersStillParseAndRoundTrip) {
  const std::string text = "f(Tensor?[]?[]?[]?[] x, int[1][2][3][4][5][6][7][8] y) -> Tensor";
  FunctionSchema s = parse_schema(text);
  EXPECT_EQ(s.str(), text);
  EXPECT_EQ(parse_schema(s.str()), s);
  EXPECT_EQ(parse_type("Tensor[]?[]?[]?[]?").str(), "Tensor[]?[]?[]?[]?");
}

TEST(SchemaParserHostile, ErrorInALongSchemaEchoesAWindowWithItsCaret) {
  // 400 KB of argument name, then the error: the message quotes 200 characters around it.
  const std::string text = "f(Tensor " + std::string(400000, 'a') + " b) -> Tensor";
  SchemaParseError e = expect_parse_error(text);
  const std::string what = e.what();
  EXPECT_EQ(e.column(), 9 + 400000 + 2);
  EXPECT_LT(what.size(), 1000u) << what.substr(0, 2000);
  EXPECT_NE(what.find("expected ')' or ',' after argument, found 'b'"), std::string::npos);
  // The echo line starts with "..." (text left out before) and ends saying what follows.
  const size_t line = what.find("\n  ") + 3;
  const size_t caret_line = what.find("\n  ", line) + 3;
  const std::string echo = what.substr(line, caret_line - 3 - line);
  EXPECT_TRUE(echo.starts_with("...")) << echo;
  EXPECT_FALSE(echo.ends_with("more characters)")) << "the window reaches the end: " << echo;
  const size_t caret = what.size() - 1 - caret_line;
  ASSERT_EQ(what.back(), '^');
  ASSERT_LT(caret, echo.size());
  EXPECT_EQ(echo[caret], 'b') << echo;
}

TEST(SchemaParserHostile, ErrorNearTheStartSaysHowMuchFollows) {
  const std::string text = "f(Tnsor x, " + repeat("Tensor y, ", 40000) + "Tensor z) -> Tensor";
  SchemaParseError e = expect_parse_error(text);
  const std::string what = e.what();
  EXPECT_EQ(e.column(), 3);
  EXPECT_LT(what.size(), 1000u) << what.substr(0, 2000);
  EXPECT_NE(what.find("unknown type 'Tnsor'; did you mean 'Tensor'?"), std::string::npos) << what;
  EXPECT_NE(what.find("\n  f(Tnsor x, Tensor y,"), std::string::npos) << what;
  const size_t more = text.size() - kMessageExcerptChars;
  EXPECT_NE(what.find("... (" + std::to_string(more) + " more characters)\n  " +
                      std::string(2, ' ') + "^"),
            std::string::npos)
      << what;
}

TEST(SchemaParserHostile, LongTokensAreQuotedShortened) {
  const std::string name(300000, 'q');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"f(" + name + " x) -> Tensor", "unknown type '" + name.substr(0, 200) + "... (299800 more"},
      {"f(Tensor x " + name + ") -> Tensor", "found '" + name.substr(0, 200) + "... (299800 more"},
      {"f(Tensor " + name + ", Tensor " + name + ") -> Tensor",
       "duplicate argument name '" + name.substr(0, 200) + "... (299800 more characters)'"},
      {"f(int x=1" + name + ") -> Tensor", "malformed number '1" + name.substr(0, 199) + "..."},
      {"f(int x=" + std::string(300000, '9') + ") -> Tensor",
       "integer literal '" + std::string(200, '9') + "... (299800 more characters)' is out of "},
      {"f(int[" + std::string(300000, '0') + "] x) -> Tensor",
       "list size must be a positive integer, found '" + std::string(200, '0') + "..."},
      {"f(bool b=[" + repeat("1, ", 100000) + "1]) -> Tensor",
       "default value [1, 1, 1, 1, 1, 1, 1"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(message.substr(0, 60));
    SchemaParseError e = expect_parse_error(text);
    const std::string what = e.what();
    EXPECT_LT(what.size(), 1200u) << what.substr(0, 2000);
    EXPECT_NE(what.find(message), std::string::npos) << what.substr(0, 2000);
  }
}

TEST(SchemaParserHostile, LongValidSchemasParse) {
  // Many arguments (a linear duplicate check) and long names, each kept whole.
  std::string text = "f(";
  for (int i = 0; i < 20000; ++i) text += "Tensor x" + std::to_string(i) + ", ";
  text += "Tensor " + std::string(100000, 'n') + ") -> Tensor";
  FunctionSchema s = parse_schema(text);
  EXPECT_EQ(s.arguments().size(), 20001u);
  EXPECT_EQ(s.arguments().back().name.size(), 100000u);
  text = "f(";
  for (int i = 0; i < 30000; ++i) text += "Tensor y" + std::to_string(i) + ", ";
  SchemaParseError e = expect_parse_error(text + "Tensor y17) -> Tensor");
  EXPECT_NE(std::string(e.what()).find("duplicate argument name 'y17'"), std::string::npos);
}

TEST(SchemaMessages, MessageExcerptKeepsShortTextAndCountsWhatItCuts) {
  EXPECT_EQ(message_excerpt(""), "");
  EXPECT_EQ(message_excerpt("add.Tensor"), "add.Tensor");
  EXPECT_EQ(message_excerpt(std::string(200, 'a')), std::string(200, 'a'));
  EXPECT_EQ(message_excerpt(std::string(250, 'a')),
            std::string(200, 'a') + "... (50 more characters)");
  // UTF-8: characters are code points and a sequence is never cut in two.
  EXPECT_EQ(message_excerpt(repeat("\xC3\xA9", 150)), repeat("\xC3\xA9", 150));
  EXPECT_EQ(message_excerpt(repeat("\xC3\xA9", 300)),
            repeat("\xC3\xA9", 200) + "... (100 more characters)");
  EXPECT_EQ(message_excerpt("x" + repeat("\xE2\x82\xAC", 250)),
            "x" + repeat("\xE2\x82\xAC", 199) + "... (51 more characters)");
}

TEST(SchemaMessages, SchemaIdentifiers) {
  for (const char* good : {"aten", "_x1", "my_ops2", "A", "__"}) {
    EXPECT_TRUE(is_schema_identifier(good)) << good;
  }
  for (const char* bad : {"", "a b", "1a", "a-b", "a::b", "a.b", "\xC3\xA9", " a", "a\n"}) {
    EXPECT_FALSE(is_schema_identifier(bad)) << bad;
  }
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// A character outside ASCII is quoted whole (not as half a UTF-8 sequence), a byte that is no
// valid sequence is escaped, and columns count characters, so the caret stands under it.
TEST(SchemaParserHostile, NonAsciiCharactersAreQuotedWhole) {
  SchemaParseError e = expect_parse_error("f\xc3\xa9(Tensor x) -> Tensor");
  EXPECT_EQ(e.column(), 2);
  EXPECT_NE(std::string(e.what()).find("found '\xc3\xa9'"), std::string::npos) << e.what();
  e = expect_parse_error("f(Tensor \xe1\xba\x8b) -> Tensor");
  EXPECT_EQ(e.column(), 10);
  EXPECT_NE(std::string(e.what()).find("'\xe1\xba\x8b'"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("\n  f(Tensor \xe1\xba\x8b) -> Tensor\n           ^"),
            std::string::npos)
      << e.what();
  e = expect_parse_error("f\xff(Tensor x) -> Tensor");
  EXPECT_NE(std::string(e.what()).find("found '\\xff'"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace loom
