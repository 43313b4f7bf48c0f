// aotgrad: tests of calling ATen ops from the IR (aten_call.h): conversions and boxed calls.
#include "aotgrad/providers/aten_call.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <unordered_map>

#include "../error_of.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

TypeRef type(BaseType b, bool optional = false, bool list = false, int list_size = 0) {
  TypeRef t;
  t.base = b;
  t.optional = optional;
  t.list = list;
  t.list_size = list_size;
  return t;
}

// A meta function for test-only ops whose metadata these tests do not look at.
ValueMeta any_meta(const MetaArgs&) {
  return ValueMeta::of(make_tensor_meta(ScalarType::Float32, {}));
}

ValueMeta three_meta(const MetaArgs& a) {
  return ValueMeta::tuple({any_meta(a), any_meta(a), any_meta(a)});
}

TEST(AtenCall, DtypesRoundTrip) {
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    EXPECT_EQ(from_c10(to_c10(t)), t) << short_name(t);
    EXPECT_EQ(static_cast<int>(to_c10(t)), c10_code(t));
  }
  EXPECT_EQ(to_c10(ScalarType::BFloat16), at::kBFloat16);
  EXPECT_EQ(to_c10(ScalarType::Bool), at::kBool);
  EXPECT_EQ(from_c10(at::kLong), ScalarType::Int64);
  EXPECT_NE(error_of([] { from_c10(at::kQInt8); }).find("QInt8"), std::string::npos);
}

TEST(AtenCall, DevicesLayoutsMemoryFormats) {
  EXPECT_EQ(to_c10(Device{}), c10::Device(c10::kCPU));
  EXPECT_EQ(to_c10(Device{DeviceType::CUDA, 1}), c10::Device(c10::kCUDA, 1));
  EXPECT_EQ(from_c10(c10::Device(c10::kCPU)), Device{});
  EXPECT_EQ(from_c10(c10::Device(c10::kMeta)).type, DeviceType::Meta);
  EXPECT_EQ(to_c10(Layout::Strided), c10::kStrided);
  EXPECT_EQ(to_c10(MemoryFormat::ChannelsLast), c10::MemoryFormat::ChannelsLast);
  EXPECT_EQ(to_c10(MemoryFormat::Preserve), c10::MemoryFormat::Preserve);
}

TEST(AtenCall, TensorMetaOfTransposedView) {
  at::Tensor base = at::zeros({3, 4}, at::kDouble);
  at::Tensor t = base.t().slice(0, 1);  // [3, 3] strides [1, 4], offset 1
  TensorMeta m = tensor_meta_of(t);
  EXPECT_EQ(m.dtype, ScalarType::Float64);
  EXPECT_EQ(m.annotation(), "f64[3, 3][1, 4]cpu");
  EXPECT_EQ(m.storage_offset, 1);
  EXPECT_FALSE(m.wrapped_number);
  ValueMeta v = value_meta_of(c10::IValue(t));
  ASSERT_TRUE(v.is_tensor());
  EXPECT_TRUE(v.tensor.same_layout(m));
  EXPECT_EQ(value_meta_of(c10::IValue(at::Tensor())).kind, ValueMeta::Kind::None);
  EXPECT_EQ(value_meta_of(c10::IValue(int64_t{7})).sym, 7);
  EXPECT_EQ(value_meta_of(c10::IValue(0.5)).sym_text, "0.5");
}

TEST(AtenCall, ConvertsConstants) {
  NodeValueFn none;
  EXPECT_EQ(to_ivalue(type(BaseType::Int), Arg::of_int(3), none).toInt(), 3);
  EXPECT_EQ(to_ivalue(type(BaseType::Float), Arg::of_int(3), none).toDouble(), 3.0);
  EXPECT_EQ(to_ivalue(type(BaseType::Float), Arg::of_float(1e-5), none).toDouble(), 1e-5);
  EXPECT_TRUE(to_ivalue(type(BaseType::Bool), Arg::of_bool(true), none).toBool());
  EXPECT_TRUE(to_ivalue(type(BaseType::Scalar), Arg::of_float(2.5), none).isDouble());
  EXPECT_TRUE(to_ivalue(type(BaseType::Scalar), Arg::of_int(2), none).isInt());
  EXPECT_TRUE(to_ivalue(type(BaseType::Tensor, /*optional=*/true), Arg::none(), none).isNone());
  EXPECT_TRUE(to_ivalue(type(BaseType::Generator, true), Arg::none(), none).isNone());
  EXPECT_EQ(to_ivalue(type(BaseType::Str), Arg::of_str("tanh"), none).toStringRef(), "tanh");

  c10::IValue dt = to_ivalue(type(BaseType::ScalarType), Arg::of_dtype(ScalarType::BFloat16), none);
  EXPECT_EQ(dt.toScalarType(), at::kBFloat16);
  c10::IValue dev = to_ivalue(type(BaseType::Device), Arg::of_device(Device{}), none);
  EXPECT_EQ(dev.toDevice(), c10::Device(c10::kCPU));
  c10::IValue mf = to_ivalue(type(BaseType::MemoryFormat),
                             Arg::of_memory_format(MemoryFormat::ChannelsLast), none);
  EXPECT_EQ(mf.toMemoryFormat(), c10::MemoryFormat::ChannelsLast);
  c10::IValue lay = to_ivalue(type(BaseType::Layout), Arg::of_layout(Layout::Strided), none);
  EXPECT_EQ(lay.toLayout(), c10::kStrided);
}

TEST(AtenCall, ConvertsLists) {
  NodeValueFn none;
  auto ints = to_ivalue(type(BaseType::Int, false, true), Arg::of_ints({2, -1}), none);
  EXPECT_EQ(ints.toIntVector(), (std::vector<int64_t>{2, -1}));
  // A single int for int[2] is repeated, as Python's `kernel_size=3`.
  auto rep = to_ivalue(type(BaseType::Int, false, true, 2), Arg::of_int(3), none);
  EXPECT_EQ(rep.toIntVector(), (std::vector<int64_t>{3, 3}));
  auto floats = to_ivalue(type(BaseType::Float, false, true),
                          Arg::of_list({Arg::of_float(0.5), Arg::of_int(2)}), none);
  EXPECT_EQ(floats.toDoubleVector(), (std::vector<double>{0.5, 2.0}));
  auto bools =
      to_ivalue(type(BaseType::Bool, false, true, 3),
                Arg::of_list({Arg::of_bool(true), Arg::of_bool(false), Arg::of_bool(true)}), none);
  ASSERT_TRUE(bools.isBoolList());
  EXPECT_EQ(bools.toBoolList().size(), 3u);
  EXPECT_FALSE(bools.toBoolList().get(1));
}

TEST(AtenCall, WrapsPythonNumbersGivenForTensors) {
  c10::IValue v = to_ivalue(type(BaseType::Tensor), Arg::of_float(2.5), {});
  at::Tensor t = v.toTensor();
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.scalar_type(), at::kDouble);
  EXPECT_TRUE(t.unsafeGetTensorImpl()->is_wrapped_number());
  EXPECT_TRUE(tensor_meta_of(t).wrapped_number);
  EXPECT_EQ(to_ivalue(type(BaseType::Tensor), Arg::of_int(2), {}).toTensor().scalar_type(),
            at::kLong);
  EXPECT_EQ(to_ivalue(type(BaseType::Tensor), Arg::of_bool(true), {}).toTensor().scalar_type(),
            at::kBool);
}

TEST(AtenCall, ConversionErrorsSayWhatWasExpected) {
  EXPECT_EQ(error_of([] { to_ivalue(type(BaseType::Int), Arg::of_str("x"), {}); }),
            "expected int, got a str");
  EXPECT_EQ(error_of([] { to_ivalue(type(BaseType::Tensor), Arg::none(), {}); }),
            "expected Tensor, got None");
  EXPECT_NE(error_of([] {
              to_ivalue(type(BaseType::Generator, true), Arg::of_int(0), {});
            }).find("only None"),
            std::string::npos);
}

// A graph with placeholders bound to real tensors, for the call tests.
struct Bound {
  Graph g;
  std::unordered_map<const Node*, c10::IValue> values;
  Node* input(const std::string& name, const at::Tensor& t) {
    Node* n = g.add_placeholder(name, ValueMeta::of(tensor_meta_of(t)));
    values[n] = t;
    return n;
  }
  NodeValueFn lookup() {
    return [this](const Node& n) { return values.at(&n); };
  }
};

TEST(AtenCall, CallsAddWithAlpha) {
  Bound b;
  at::Tensor x = at::arange(4, at::kFloat), y = at::ones({4}, at::kFloat);
  Node* add = b.g.add_call(aten_ops().get("add.Tensor"), {b.input("x", x), b.input("y", y)},
                           {{"alpha", Arg::of_int(2)}});
  auto out = call_node(*add, b.lookup());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0].toTensor(), x + 2 * y));
  // Resolution is cached per op.
  EXPECT_EQ(&aten_op(*add->op()), &aten_op(aten_ops().get("add.Tensor")));
  EXPECT_NE(aten_op(*add->op()).libtorch_schema().find("aten::add.Tensor"), std::string::npos);
}

TEST(AtenCall, WrappedNumberKeepsTheTensorDtype) {
  Bound b;
  at::Tensor x = at::arange(3, at::kInt);
  Node* mul = b.g.add_call(aten_ops().get("mul.Tensor"), {b.input("x", x), Arg::of_int(3)});
  at::Tensor r = call_node(*mul, b.lookup())[0].toTensor();
  EXPECT_EQ(r.scalar_type(), at::kInt);  // not promoted to i64: 3 is a wrapped number
  Node* mulf = b.g.add_call(aten_ops().get("mul.Tensor"), {mul, Arg::of_float(0.5)});
  b.values[mul] = r;
  EXPECT_EQ(call_node(*mulf, b.lookup())[0].toTensor().scalar_type(), at::kFloat);
}

TEST(AtenCall, LibtorchErrorsBecomeErrorsNamingTheOp) {
  Bound b;
  Node* x = b.input("x", at::ones({3}));
  Node* y = b.input("y", at::ones({4}));
  // Graph::add_call would reject the shapes; add the node without inference.
  const OpDef& add = aten_ops().get("add.Tensor");
  Node* n = b.g.add_call_raw(add, {x, y, Arg::of_int(1)}, 3, ValueMeta::none(), "add");
  std::string msg = error_of([&] { call_node(*n, b.lookup()); });
  EXPECT_NE(msg.find("node 'add' (aten::add.Tensor)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("must match the size"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Exception raised from"), std::string::npos) << msg;  // no backtrace
}

TEST(AtenCall, OptionalTensorIntListAndTupleResult) {
  OpTable ops;
  ops.def(
         "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
         "float eps) -> (Tensor, Tensor, Tensor)")
      .meta(three_meta);
  Bound b;
  at::Tensor x = at::randn({2, 3, 4});
  at::Tensor w = at::randn({4});
  Node* n = b.g.add_call(
      ops.get("native_layer_norm"),
      {b.input("x", x), Arg::of_ints({4}), b.input("w", w), Arg::none(), Arg::of_float(1e-5)});
  auto out = call_node(*n, b.lookup());
  ASSERT_EQ(out.size(), 3u);
  auto expected = at::native_layer_norm(x, {4}, w, {}, 1e-5);
  EXPECT_TRUE(at::allclose(out[0].toTensor(), std::get<0>(expected)));
  EXPECT_EQ(tensor_meta_of(out[1].toTensor()).annotation(), "f32[2, 3, 1][3, 1, 1]cpu");
}

TEST(AtenCall, TensorListArgument) {
  OpTable ops;
  ops.def("cat(Tensor[] tensors, int dim=0) -> Tensor").meta(any_meta);
  Bound b;
  at::Tensor x = at::ones({2, 3}), y = at::zeros({1, 3});
  Node* n = b.g.add_call(ops.get("cat"), {Arg::of_list({b.input("x", x), b.input("y", y)})});
  at::Tensor r = call_node(*n, b.lookup())[0].toTensor();
  EXPECT_EQ(r.sizes(), at::IntArrayRef({3, 3}));
}

TEST(AtenCall, ExtraLibtorchArgumentsGetTheirDefaults) {
  OpTable ops;
  // libtorch's sum.dim_IntList also has `*, ScalarType? dtype=None`.
  ops.def("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False) -> Tensor").meta(any_meta);
  Bound b;
  Node* n = b.g.add_call(ops.get("sum.dim_IntList"),
                         {b.input("x", at::ones({2, 5})), Arg::of_ints({1}), Arg::of_bool(true)});
  at::Tensor r = call_node(*n, b.lookup())[0].toTensor();
  EXPECT_EQ(r.sizes(), at::IntArrayRef({2, 1}));
  EXPECT_EQ(r[0][0].item<float>(), 5.0f);
}

TEST(AtenCall, UnknownOpsAndSchemaMismatchesAreErrors) {
  OpTable ops;
  ops.def("no_such_op_in_aten(Tensor self) -> Tensor").meta(any_meta);
  ops.def("mul.Tensor(Tensor self, Tensor y) -> Tensor").meta(any_meta);
  ops.def("neg(Tensor self) -> (Tensor, Tensor)").meta(any_meta);
  std::string unknown = error_of([&] { AtenOp op(ops.get("no_such_op_in_aten")); });
  EXPECT_NE(unknown.find("aten::no_such_op_in_aten"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("no such operator"), std::string::npos) << unknown;
  std::string renamed = error_of([&] { AtenOp op(ops.get("mul.Tensor")); });
  EXPECT_NE(renamed.find("'other' in libtorch, 'y' in aotgrad"), std::string::npos) << renamed;
  std::string returns = error_of([&] { AtenOp op(ops.get("neg")); });
  EXPECT_NE(returns.find("returns"), std::string::npos) << returns;
  // Not cached: asking again throws again.
  EXPECT_THROW(aten_op(ops.get("no_such_op_in_aten")), Error);
}

TEST(AtenCall, InplaceOpReturnsItsInput) {
  Bound b;
  at::Tensor x = at::zeros({2, 2});
  Node* n = b.g.add_call(aten_ops().get("add_.Tensor"), {b.input("x", x), Arg::of_float(1.5)});
  at::Tensor r = call_node(*n, b.lookup())[0].toTensor();
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(x[1][1].item<float>(), 1.5f);
}

TEST(AtenCall, GeluBackwardOfAPermutedGrad) {
  // A grad laid out against self (gelu(x).transpose(1, 2) in the forward, as torchaudio's
  // wav2vec2 feature extractor ends): through AtenOp it agrees with the kernel on contiguous
  // operands, and keeps the grad's layout.
  at::manual_seed(0);
  at::Tensor grad = at::randn({2, 4, 3}).transpose(1, 2);
  at::Tensor self = at::randn({2, 3, 4});
  at::Tensor want = at::gelu_backward(grad.contiguous(), self);
  const AtenOp& op = aten_op(aten_ops().get("gelu_backward"));
  for (const char* approximate : {"none", "tanh"}) {
    at::Tensor got = op.call_boxed({grad, self, std::string(approximate)})[0].toTensor();
    at::Tensor ref = at::gelu_backward(grad.contiguous(), self, approximate);
    EXPECT_TRUE(at::allclose(got, ref, 1e-5, 1e-6)) << approximate;
    EXPECT_EQ(got.strides(), grad.strides()) << approximate;
  }
  EXPECT_TRUE(at::allclose(op.call_boxed({grad, self, std::string("none")})[0].toTensor(), want));
  // The caller's self is left as it was.
  EXPECT_TRUE(self.is_contiguous());
}

}  // namespace
}  // namespace aotgrad
