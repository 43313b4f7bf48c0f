// aotgrad: builds the ATen op table from the family files.
#include "aotgrad/ops/registry.h"

#include <mutex>

#include "aotgrad/ops/formula.h"

namespace aotgrad {
namespace {

// The provider installed for aten_ops(), kept apart so that installing one (the runtime layer does
// it when it loads) does not build the table.
std::mutex g_provider_mu;
const OpProvider* g_provider = nullptr;
OpTable* g_table = nullptr;

}  // namespace

void install_op_provider(const OpProvider* provider) {
  std::lock_guard<std::mutex> lock(g_provider_mu);
  g_provider = provider;
  if (g_table) g_table->set_provider(provider);
}

const OpProvider* installed_op_provider() {
  std::lock_guard<std::mutex> lock(g_provider_mu);
  return g_provider;
}

const OpTable& aten_ops() {
  static const OpTable* table = [] {
    auto* t = new OpTable();
    register_pointwise_ops(*t);
    register_reduction_ops(*t);
    register_linalg_ops(*t);
    register_view_ops(*t);
    register_copy_ops(*t);
    register_nn_ops(*t);
    register_norm_ops(*t);
    register_factory_ops(*t);
    register_misc_ops(*t);
    register_loss_ops(*t);
    register_higher_order_ops(*t);
    register_cond_op(*t);
    register_collective_ops(*t);
    register_provided_op_facts(*t);
    t->finalize();
    bind_formulas(*t);
    std::lock_guard<std::mutex> lock(g_provider_mu);
    g_table = t;
    t->set_provider(g_provider);
    return t;
  }();
  return *table;
}

}  // namespace aotgrad
