// aotgrad: a CPU allocator that counts live and peak bytes around libtorch's default one.
#include "aotgrad/runtime/memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace aotgrad {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_allocations{0};

// The inner allocations, by data pointer. Our DataPtr's context is its data pointer, as c10's own
// CPU allocator makes it: oneDNN-backed kernels assert that (dptr.get() == dptr.get_context()).
struct Allocation {
  c10::DataPtr inner;
  int64_t bytes;
};
std::mutex g_mu;
std::unordered_map<void*, Allocation>& allocations() {
  static auto* m =
      new std::unordered_map<void*, Allocation>();  // never destroyed: frees may come late
  return *m;
}

void free_allocation(void* data) {
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = allocations().find(data);
    if (it == allocations().end()) return;
    a = std::move(it->second);
    allocations().erase(it);
  }
  g_current.fetch_sub(a.bytes, std::memory_order_relaxed);
  // `a.inner` frees the memory through the wrapped allocator when it goes out of scope.
}

class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    c10::Device device = inner.device();
    if (!data) return inner;  // zero-byte allocations
    int64_t bytes = static_cast<int64_t>(n);
    {
      std::lock_guard<std::mutex> lock(g_mu);
      allocations()[data] = Allocation{std::move(inner), bytes};
    }
    int64_t now = g_current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return {data, data, &free_allocation, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_allocation; }

  // Our allocations are the wrapped allocator's, so it copies them.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }

 private:
  c10::Allocator* inner_;
};

std::once_flag g_once;
std::atomic<bool> g_installed{false};

}  // namespace

void install_tracking_allocator() {
  std::call_once(g_once, [] {
    static TrackingAllocator allocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(&allocator, /*priority=*/100);
    g_installed = true;
  });
}

bool tracking_allocator_installed() { return g_installed; }

MemoryStats memory_stats() { return {g_current.load(), g_peak.load(), g_allocations.load()}; }

void reset_peak_memory() {
  g_peak = g_current.load();
  g_allocations = 0;
}

}  // namespace aotgrad
