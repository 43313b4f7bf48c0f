// aotgrad: measured CPU memory -- a tracking allocator installed under libtorch's CPU allocator.
#pragma once

#include <cstdint>

namespace aotgrad {

struct MemoryStats {
  int64_t current_bytes = 0;  // bytes of tensor storage alive now
  int64_t peak_bytes = 0;     // the most alive at once since the last reset_peak_memory()
  int64_t allocations = 0;    // allocations since the last reset_peak_memory()
};

/// Installs the tracking allocator as libtorch's CPU allocator (idempotent, thread-safe). Storage
/// allocated before installation is not counted, and frees of it are ignored.
void install_tracking_allocator();
bool tracking_allocator_installed();
MemoryStats memory_stats();
/// Sets the peak to the current bytes and the allocation count to zero.
void reset_peak_memory();

}  // namespace aotgrad
