// aotgrad: SymInt-clean kernels for composite ops whose libtorch kernels read concrete sizes.
#include "aotgrad/providers/symbolic_kernels.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/matmul_native.h>
#include <torch/library.h>

#include <mutex>

namespace aotgrad {
namespace {

bool symbolic(const at::Tensor& t) { return t.unsafeGetTensorImpl()->has_symbolic_sizes_strides(); }

c10::SymInt product(c10::SymIntArrayRef v) {
  c10::SymInt p = 1;
  for (const c10::SymInt& x : v) p = p * x;
  return p;
}

// Whether libtorch's matmul folds the batch dimensions of the larger operand into a matrix (mm or
// mv instead of bmm): the larger has 3 or more dimensions and the other 2 or fewer, and either the
// other requires grad, or the larger (not a matrix on the left) is viewable as a matrix.
bool should_fold(const at::Tensor& a, const at::Tensor& b) {
  const bool a_larger = a.dim() >= b.dim();
  const at::Tensor t1 = a_larger ? a : b.mT();
  const int64_t dim1 = t1.dim(), dim2 = a_larger ? b.dim() : a.dim();
  if (!(dim1 >= 3 && dim2 <= 2)) return false;
  if ((a_larger ? b : a).requires_grad()) return true;
  if (a.dim() == 2) return false;
  if (t1.sym_numel() == 0) return true;
  for (int64_t i = 0; i + 2 < dim1; ++i)
    if (t1.sym_stride(i) != t1.sym_stride(i + 1) * t1.sym_size(i + 1)) return false;
  return true;
}

at::Tensor symbolic_matmul(const at::Tensor& a, const at::Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  TORCH_CHECK(da != 0 && db != 0, "both arguments to matmul need to be at least 1D, but they are ",
              da, "D and ", db, "D");
  if (da == 1 && db == 1) return a.dot(b);
  if (da == 2 && db == 1) return a.mv(b);
  if (da == 1 && db == 2) return a.unsqueeze(0).mm(b).squeeze_(0);
  if (da == 2 && db == 2) return a.mm(b);
  if (should_fold(a, b)) {
    const bool transpose = db > da;
    const at::Tensor t1 = transpose ? b.mT() : a;
    const at::Tensor t2 = !transpose ? b : da == 2 ? a.t() : a;
    c10::SymIntArrayRef sizes1 = t1.sym_sizes();
    std::vector<c10::SymInt> shape(sizes1.begin(), sizes1.end() - 1);
    const c10::SymInt folded = product(shape);
    const bool matrix = t2.dim() == 2;
    if (matrix) shape.push_back(t2.sym_size(1));
    const at::Tensor t1_folded = t1.reshape_symint({folded, sizes1.back()});
    if (!matrix) return at::_unsafe_view_symint(t1_folded.mv(t2), shape);
    const at::Tensor out = at::_unsafe_view_symint(t1_folded.mm(t2), shape);
    return transpose ? out.mT().contiguous() : out;
  }
  c10::SymIntArrayRef sa = a.sym_sizes(), sb = b.sym_sizes();
  const c10::SymInt n = da > 1 ? sa[da - 2] : c10::SymInt(1);
  const c10::SymInt m1 = sa.back();
  c10::SymIntArrayRef batch1 = sa.slice(0, std::max<int64_t>(da - 2, 0));
  const c10::SymInt m2 = db > 1 ? sb[db - 2] : sb.front();
  const c10::SymInt p = db > 1 ? sb.back() : c10::SymInt(1);
  c10::SymIntArrayRef batch2 = sb.slice(0, std::max<int64_t>(db - 2, 0));
  if (da == 3 && db == 3 && batch1[0] != batch2[0]) {
    if (batch1[0] == 1 && a.requires_grad()) return symbolic_matmul(a.squeeze(0), b);
    if (batch2[0] == 1 && b.requires_grad()) return symbolic_matmul(a, b.squeeze(0));
  }
  c10::SymDimVector shape = at::infer_size_symdimvector(batch1, batch2);
  const c10::SymInt batch = product(shape);
  c10::SymDimVector size1(shape);
  size1.append({n, m1});
  const at::Tensor a3 = a.expand_symint(size1).reshape_symint({batch, n, m1});
  const bool vector_rhs = db == 1;
  c10::SymDimVector size2(shape);
  if (vector_rhs)
    size2.push_back(m2);
  else
    size2.append({m2, p});
  at::Tensor b3 = b.expand_symint(size2);
  b3 = vector_rhs ? b3.reshape_symint({batch, m2}).unsqueeze(2) : b3.reshape_symint({batch, m2, p});
  if (da > 1) shape.push_back(n);
  if (db > 1) shape.push_back(p);
  if (vector_rhs) return at::_unsafe_view_symint(a3.bmm(b3).squeeze(-1), shape);
  return at::_unsafe_view_symint(a3.bmm(b3), shape);
}

at::Tensor matmul_kernel(const at::Tensor& a, const at::Tensor& b) {
  if (symbolic(a) || symbolic(b)) return symbolic_matmul(a, b);
  return at::native::matmul(a, b);
}

}  // namespace

void register_symbolic_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    static torch::Library lib(torch::Library::IMPL, "aten", c10::DispatchKey::AutogradVE, __FILE__,
                              __LINE__);
    lib.impl("matmul", TORCH_FN(matmul_kernel));
  });
}

}  // namespace aotgrad
