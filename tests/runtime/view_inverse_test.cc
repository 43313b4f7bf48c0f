// aotgrad: each view's declared inverse, and the generic as_strided_scatter inverse an op provider
// gives the views it derives from schemas, against eager ATen: writing v into the view of a clone
// of x (copy_ run as written) leaves the clone equal to both inverses' results.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {
namespace {

struct Case {
  const char* x;     // the base's annotation
  const char* view;  // the view of `x`, as a call
  int64_t element;   // the element written, for a list of views; -1 otherwise
};

std::shared_ptr<Graph> parse(const std::string& text) {
  return std::shared_ptr<Graph>(parse_graph(text, aten_ops()).release());
}

std::vector<c10::IValue> run(const std::shared_ptr<Graph>& g, const at::Tensor& x,
                             const at::Tensor& v) {
  return Interpreter(g).run({x, v});
}

TEST(ViewInverse, DeclaredAndGenericInversesMatchEagerWrites) {
  const Case kCases[] = {
      {"f32[4, 6]", "torch.ops.aten.t.default(x)", -1},
      {"f32[2, 3, 4]", "torch.ops.aten.transpose.int(x, 0, 2)", -1},
      {"f32[2, 3, 4]", "torch.ops.aten.permute.default(x, [2, 0, 1])", -1},
      {"f32[4, 6]", "torch.ops.aten.view.default(x, [3, 8])", -1},
      {"f32[4, 6]", "torch.ops.aten.unsqueeze.default(x, 1)", -1},
      {"f32[4, 1, 6]", "torch.ops.aten.squeeze.dim(x, 1)", -1},
      {"f32[4, 6]", "torch.ops.aten.alias.default(x)", -1},
      {"f32[4, 6]", "torch.ops.aten.slice.Tensor(x, 1, 1, 6, 2)", -1},
      {"f32[4, 6]", "torch.ops.aten.narrow.default(x, 0, -3, 2)", -1},
      {"f32[4, 6]", "torch.ops.aten.select.int(x, 1, 2)", -1},
      {"f32[4, 6]", "torch.ops.aten.diagonal.default(x, -1)", -1},
      {"f32[4, 6]", "torch.ops.aten.as_strided.default(x, [2, 3], [6, 2], 7)", -1},
      {"f32[4, 6]", "torch.ops.aten.split.Tensor(x, 4, 1)", 1},
      {"f32[4, 6]", "torch.ops.aten.split_with_sizes.default(x, [1, 3], 0)", 1},
      {"f32[4, 6]", "torch.ops.aten.unbind.int(x, 1)", 3},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.view);
    std::string view = c.element >= 0 ? "getitem = y[" + std::to_string(c.element) + "]" : "";
    std::string view_value = c.element >= 0 ? "getitem" : "y";
    // The view's metadata, for v.
    auto probe =
        parse("def forward(self, x: \"" + std::string(c.x) + "\"):\n    y = " + c.view + "\n    " +
              (view.empty() ? "" : view + "\n    ") + "return " + view_value + "\n");
    const TensorMeta& vm = probe->find(view_value)->tensor_meta();
    std::string v = "v: \"" + vm.annotation() + "\"";
    std::string params = "x: \"" + std::string(c.x) + "\", " + v;

    // Eager: the view of a clone, written with copy_ as written.
    auto eager =
        parse("def forward(self, " + params + "):\n    c = torch.ops.aten.clone.default(x)\n" +
              "    y = " + std::string(c.view).replace(std::string(c.view).find("(x"), 2, "(c") +
              "\n    " + (view.empty() ? "" : view + "\n    ") +
              "copy_ = torch.ops.aten.copy_.default(" + view_value + ", v)\n    return c\n");

    // The inverses, appended to the view's graph.
    auto g = parse("def forward(self, " + params + "):\n    y = " + c.view + "\n    return x\n");
    Node* y = g->find("y");
    Node* x = g->find("x");
    Node* vn = g->find("v");
    ViewInverseBuilder declared(*g, *y->op(), y->args(), c.element, x, vn);
    Node* a = y->op()->view_inverse(declared);
    ViewInverseBuilder generic(*g, *y->op(), y->args(), c.element, x, vn);
    Node* b = as_strided_view_inverse(generic);
    g->set_output(Arg::of_tuple({Arg(a), Arg(b)}));

    auto concrete = [](const SymIntVector& sizes) {
      std::vector<int64_t> out;
      for (const SymInt& d : sizes) out.push_back(d.value());
      return out;
    };
    at::Tensor xt = at::randn(concrete(x->tensor_meta().sizes), at::kFloat);
    at::Tensor vt = at::randn(concrete(vm.sizes), at::kFloat);
    at::Tensor want = run(eager, xt, vt)[0].toTensor();
    std::vector<c10::IValue> got = run(g, xt, vt);
    EXPECT_TRUE(at::equal(got[0].toTensor(), want)) << "declared inverse";
    EXPECT_TRUE(at::equal(got[1].toTensor(), want)) << "as_strided_view_inverse";
  }
}

}  // namespace
}  // namespace aotgrad
