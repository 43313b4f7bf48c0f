// aotgrad: linalg ops.
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

void register_linalg_ops(OpTable& t) { (void)t; }

}  // namespace aotgrad
