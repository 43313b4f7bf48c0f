// aotgrad: view ops.
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

void register_view_ops(OpTable& t) { (void)t; }

}  // namespace aotgrad
