// aotgrad: a CPU allocator that counts live and peak bytes around libtorch's default one.
#include "aotgrad/runtime/memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>

namespace aotgrad {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_allocations{0};

// What our DataPtr's context owns: the inner allocation and its size.
struct Allocation {
  c10::DataPtr inner;
  int64_t bytes;
};

void free_allocation(void* ctx) {
  auto* a = static_cast<Allocation*>(ctx);
  g_current.fetch_sub(a->bytes, std::memory_order_relaxed);
  delete a;  // frees the inner DataPtr through the wrapped allocator
}

class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    c10::Device device = inner.device();
    auto* ctx = new Allocation{std::move(inner), static_cast<int64_t>(n)};
    int64_t now = g_current.fetch_add(ctx->bytes, std::memory_order_relaxed) + ctx->bytes;
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return {data, ctx, &free_allocation, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

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

MemoryStats memory_stats() {
  return {g_current.load(), g_peak.load(), g_allocations.load()};
}

void reset_peak_memory() {
  g_peak = g_current.load();
  g_allocations = 0;
}

}  // namespace aotgrad
