// aotgrad: the heap settings of a short-lived process (the command line). Std only.
#pragma once

#include <cstddef>

namespace aotgrad {

/// What reserve_heap did.
struct HeapReservation {
  size_t bytes = 0;         // address space added to the malloc heap (0: nothing was done)
  bool huge_pages = false;  // transparent huge pages were asked for on it (madvise)
};

/// Prepares the malloc heap of a process that builds many small objects and exits: a compilation
/// allocates a few MiB in ~50k small blocks, and on first touch each fresh 4 KiB page costs a page
/// fault (~2 us each, a third of a resnet18 compilation's time). Extends glibc's heap by `bytes` of
/// address space up front (no memory is touched), keeps it (no trimming), grows it later in 4 MiB
/// steps, and asks for transparent huge pages on it where the kernel offers them
/// (/sys/kernel/mm/transparent_hugepage/enabled is `always` or `madvise`), so that 2 MiB are
/// faulted at once. Blocks below 32 MiB then come from the heap. Not for a process that holds
/// large tensors (they would stay in the heap) nor for a library: it is the process's policy.
/// Elsewhere than glibc on Linux, does nothing.
HeapReservation reserve_heap(size_t bytes);

}  // namespace aotgrad
