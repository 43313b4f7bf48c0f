// aotgrad: misc ops.
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

void register_misc_ops(OpTable& t) { (void)t; }

}  // namespace aotgrad
