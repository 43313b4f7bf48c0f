// aotgrad: the op provider of the runtime layer -- every op libtorch's c10 dispatcher knows (ATen's
// and custom TORCH_LIBRARY ops) as an OpDef, for the names the registry does not declare.
#pragma once

#include "aotgrad/ir/op.h"
#include "aotgrad/ops/provider_stats.h"

namespace aotgrad {

/// Gives an OpDef for each op of libtorch's dispatcher the registry does not declare (see Note [The
/// op world] in dispatcher_ops.cc):
/// - schema: libtorch's own, through aotgrad's schema parser (an argument type aotgrad cannot
///   represent, such as Storage or a custom class, is an Error naming the argument);
/// - tags: native_functions.yaml's (generated at build time), pointwise for TensorIterator
///   kernels, view / inplace / factory from the alias annotations, CompositeImplicitAutograd from
///   the dispatcher's kernel table;
/// - links: `foo_` <-> `foo` of the same overload when both exist; a view's inverse is
///   as_strided_view_inverse (ops/functionalization.h);
/// - meta: fallback_meta() (libtorch's Meta kernel, else its CPU kernel on zeros);
/// - derivative and decomposition: traced through libtorch (traced_rules.h).
const OpProvider& libtorch_op_provider();

/// Installs libtorch_op_provider() as aten_ops()'s provider. Idempotent and thread-safe; the
/// runtime layer calls it when it is loaded (and every entry point calls it again), so a program
/// linking aotgrad's runtime sees libtorch's ops in aten_ops() without asking.
void install_libtorch_ops();

/// How provided ops got their facts: ops/provider_stats.h (op_provider_stats()).

}  // namespace aotgrad
