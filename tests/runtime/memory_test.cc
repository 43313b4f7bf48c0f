// Tests for the tracking CPU allocator.
#include "aotgrad/runtime/memory.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace aotgrad {
namespace {

TEST(Memory, CountsLiveAndPeakBytes) {
  install_tracking_allocator();
  ASSERT_TRUE(tracking_allocator_installed());
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  {
    at::Tensor a = at::empty({1024}, at::kFloat);  // 4 KiB
    EXPECT_EQ(memory_stats().current_bytes - base, 4096);
    {
      at::Tensor b = at::empty({2048}, at::kDouble);  // 16 KiB
      EXPECT_EQ(memory_stats().current_bytes - base, 4096 + 16384);
    }
    EXPECT_EQ(memory_stats().current_bytes - base, 4096);
  }
  MemoryStats s = memory_stats();
  EXPECT_EQ(s.current_bytes, base);
  EXPECT_EQ(s.peak_bytes - base, 4096 + 16384);
  EXPECT_EQ(s.allocations, 2);
}

TEST(Memory, ResetPeakForgetsEarlierPeaks) {
  install_tracking_allocator();
  { at::Tensor big = at::empty({1 << 20}, at::kFloat); }
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  { at::Tensor small = at::ones({10}, at::kFloat); }
  EXPECT_EQ(memory_stats().peak_bytes - base, 40);
}

TEST(Memory, KernelsAllocateThroughIt) {
  install_tracking_allocator();
  at::Tensor x = at::randn({64, 64});
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  at::Tensor y = at::mm(x, x).relu();
  EXPECT_GE(memory_stats().peak_bytes - base, 64 * 64 * 4);
  EXPECT_EQ(memory_stats().current_bytes - base, 64 * 64 * 4);
}

// oneDNN-backed kernels require a DataPtr whose context is its data pointer.
TEST(Memory, OneDnnKernelsWorkUnderTheTrackingAllocator) {
  install_tracking_allocator();
  at::Tensor x = at::randn({2, 3, 8, 8});
  at::Tensor w = at::randn({4, 3, 3, 3});
  EXPECT_EQ(at::gelu(x).sizes(), x.sizes());
  EXPECT_EQ(at::conv2d(x, w).sizes(), (c10::IntArrayRef{2, 4, 6, 6}));
  EXPECT_TRUE(at::allclose(at::gelu(x), 0.5 * x * (1 + at::erf(x / std::sqrt(2.0))), 1e-5, 1e-6));
}

}  // namespace
}  // namespace aotgrad
