// Tests for reserve_heap: the reservation is address space in glibc's heap that later small
// allocations use without growing the heap again.
#include "aotgrad/support/heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <unistd.h>
#endif

namespace aotgrad {
namespace {

#if defined(__linux__) && defined(__GLIBC__)
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(f, modes);
  return modes;
}

TEST(Heap, ReservedAddressSpaceServesLaterAllocations) {
  HeapReservation r = reserve_heap(size_t{16} << 20);
  ASSERT_GE(r.bytes, size_t{16} << 20);
  std::string mode = thp_mode();
  bool offered =
      mode.find("[always]") != std::string::npos || mode.find("[madvise]") != std::string::npos;
  EXPECT_EQ(r.huge_pages, offered) << mode;

  // 8 MiB in 64-byte blocks (what a compilation allocates) fit without moving the heap's end.
  void* end_before = sbrk(0);
  std::vector<void*> blocks;
  for (int i = 0; i < (8 << 20) / 64; ++i) blocks.push_back(std::malloc(64));
  EXPECT_EQ(sbrk(0), end_before);
  for (void* b : blocks) std::free(b);
  // Freed, the reservation stays: nothing was given back.
  EXPECT_EQ(sbrk(0), end_before);
}

TEST(Heap, SmallRequestsDoNothing) {
  HeapReservation r = reserve_heap(4096);
  EXPECT_EQ(r.bytes, 0u);
  EXPECT_FALSE(r.huge_pages);
}
#endif

}  // namespace
}  // namespace aotgrad
