// aotgrad: facts about ops the registry does not declare -- their schema, tags and meta come from
// the op provider (libtorch's dispatcher, DESIGN.md "The op world") -- where the provider cannot
// know them: PyTorch's partitioner classes (torch/_functorch/partitioners.py,
// get_default_op_list). An op declared later takes its facts from its declaration instead (the
// registry sweep checks that no packet here is declared).
#include "aotgrad/ops/registry.h"

namespace aotgrad {

void register_provided_op_facts(OpTable& t) {
  // default_recomputable_ops that the registry does not declare; the provider tags most of them
  // pointwise as well (native_functions.yaml), the rest (triu, any, index, ...) only this says.
  for (const char* packet : {"atan2",       "remainder",
                             "fmod",        "__and__",
                             "__or__",      "__xor__",
                             "__lshift__",  "__rshift__",
                             "ceil",        "floor",
                             "frac",        "round",
                             "trunc",       "log10",
                             "log2",        "lgamma",
                             "erfc",        "tan",
                             "atanh",       "softplus",
                             "threshold",   "_grad_sum_to_size",
                             "sum_to_size", "to",
                             "type_as",     "broadcast_tensors",
                             "triu",        "isinf",
                             "any",         "index",
                             "prims::div",  "prims::convert_element_type",
                             "prims::var",  "prims::sum",
                             "prims::iota"})
    t.tag_provided(packet, kRecomputable);
  t.tag_provided("prims::broadcast_in_dim", kRecomputable | kViewOp);
  // compute_intensive_ops that the registry does not declare.
  for (const char* packet : {"_scaled_dot_product_flash_attention",
                             "_scaled_dot_product_efficient_attention", "_flash_attention_forward",
                             "_efficient_attention_forward", "upsample_bilinear2d", "_scaled_mm"})
    t.tag_provided(packet, kComputeIntensive);
  // Normalizations (MinCutOptions::recompute_norms_from_saved) that the registry does not declare.
  t.tag_provided("_native_batch_norm_legit", kNormalization);
  t.tag_provided("native_group_norm", kNormalization);
}

}  // namespace aotgrad
