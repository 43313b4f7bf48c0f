// aotgrad: measured memory -- on the CPU a tracking allocator installed under libtorch's CPU
// allocator; on an accelerator (CUDA) the statistics of its caching allocator.
#pragma once

#include <c10/core/Device.h>

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

/// The memory of `device`: the CPU's as memory_stats(); an accelerator's (CUDA) from its caching
/// allocator (c10::DeviceAllocator::getDeviceStats): the bytes of tensors allocated on it, the
/// peak since the last reset_peak_memory(device), and the allocations since then. Throws Error
/// when the device type has no caching allocator in this process (a CUDA device where libtorch_cuda
/// is not loaded).
MemoryStats memory_stats(c10::Device device);
/// reset_peak_memory() for `device`; on an accelerator it also resets the caching allocator's
/// accumulated statistics (torch.cuda.reset_peak_memory_stats and reset_accumulated_memory_stats).
void reset_peak_memory(c10::Device device);

}  // namespace aotgrad
