// aotgrad: the heap settings of a short-lived process.
#include "aotgrad/support/heap.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#define AOTGRAD_GLIBC_HEAP 1
#endif

namespace aotgrad {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

#ifdef AOTGRAD_GLIBC_HEAP
// Whether madvise(MADV_HUGEPAGE) gives huge pages: the kernel's mode is `always` or `madvise`.
bool transparent_huge_pages() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(f, modes);
  return modes.find("[always]") != std::string::npos ||
         modes.find("[madvise]") != std::string::npos;
}
#endif

}  // namespace

HeapReservation reserve_heap(size_t bytes) {
  HeapReservation r;
#ifdef AOTGRAD_GLIBC_HEAP
  if (bytes < kHugePage) return r;
  // Later extensions in 4 MiB steps; nothing given back while the process lives; blocks up to
  // 32 MiB (glibc's largest dynamic threshold) from the heap, the reservation included.
  mallopt(M_TOP_PAD, static_cast<int>(2 * kHugePage));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(bytes + 4 * kHugePage));
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(std::max(bytes + kHugePage, size_t{32} << 20)));
  auto* before = static_cast<char*>(sbrk(0));
  void* block = std::malloc(bytes);
  auto* after = static_cast<char*>(sbrk(0));
  std::free(block);
  if (block == nullptr || before == reinterpret_cast<char*>(-1) || after <= before) return r;
  r.bytes = static_cast<size_t>(after - before);
  // The whole 2 MiB pages inside the new part of the heap.
  auto first = (reinterpret_cast<uintptr_t>(before) + kHugePage - 1) & ~(kHugePage - 1);
  auto last = reinterpret_cast<uintptr_t>(after) & ~(kHugePage - 1);
  if (last > first && transparent_huge_pages())
    r.huge_pages = madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) == 0;
#else
  (void)bytes;
  (void)kHugePage;
#endif
  return r;
}

}  // namespace aotgrad
