// aotgrad: metadata of an op that has no declared meta function, found by running libtorch.
#pragma once

#include "aotgrad/ir/op.h"

namespace aotgrad {

/// The MetaFn of provided ops: the op's result metadata computed by libtorch, cached per op and
/// argument metadata (tensor dtype, sizes, strides, storage offset and device; every other
/// argument's value). It runs the op through the dispatcher on meta tensors -- libtorch's Meta
/// kernel, or its CompositeExplicitAutograd kernel, which runs on meta tensors too -- and, where
/// that fails, the CPU kernel once on zero-filled buffers of the right sizes and strides. Results
/// get the device of the op's Device argument, else of its first tensor argument, else cpu.
///
/// Throws Error naming the op for arguments libtorch rejects (the CPU kernel's message), for
/// symbolic sizes (which only declared meta functions handle), and for ops whose result depends on
/// their inputs' values (native_functions.yaml's dynamic_output_shape and data_dependent_output
/// tags: nonzero, unique, item), which no run on stand-in values can tell.
ValueMeta fallback_meta(const MetaArgs& args);

}  // namespace aotgrad
