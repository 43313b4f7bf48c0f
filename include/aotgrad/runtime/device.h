// aotgrad: which accelerator a process can run on. aotgrad links only libtorch's CPU library, so
// that a process that runs no CUDA kernel does not pay the CUDA runtime's start-up; a program that
// wants CUDA links libtorch's CUDA library itself (find_package(Torch) does), or asks here.
#pragma once

namespace aotgrad {

/// Whether CUDA tensors can be made in this process (torch::cuda::is_available()). The first call
/// loads libtorch's CUDA library (libtorch_cuda.so, beside libtorch_cpu.so) into the process if the
/// program did not link it, which registers libtorch's CUDA backend. Call it before anything asks
/// libtorch about CUDA: libtorch settles the answer on the first question. False on a machine
/// without a GPU or with a CPU-only libtorch.
bool cuda_available();

}  // namespace aotgrad
