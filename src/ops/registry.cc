// aotgrad: builds the ATen op table from the family files.
#include "aotgrad/ops/registry.h"

namespace aotgrad {

const OpTable& aten_ops() {
  static const OpTable* table = [] {
    auto* t = new OpTable();
    register_pointwise_ops(*t);
    register_reduction_ops(*t);
    register_linalg_ops(*t);
    register_view_ops(*t);
    register_copy_ops(*t);
    register_nn_ops(*t);
    register_factory_ops(*t);
    register_misc_ops(*t);
    register_loss_ops(*t);
    register_higher_order_ops(*t);
    t->finalize();
    return t;
  }();
  return *table;
}

}  // namespace aotgrad
