// aotgrad: a CPU allocator that counts live and peak bytes around libtorch's default one, and an
// accelerator's caching allocator statistics.
#include "aotgrad/runtime/memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "aotgrad/support/error.h"

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

namespace {

// `device`'s caching allocator, or an Error naming the device.
c10::DeviceAllocator* device_allocator(c10::Device device) {
  auto* allocator = dynamic_cast<c10::DeviceAllocator*>(c10::GetAllocator(device.type()));
  if (!allocator || !allocator->initialized())
    throw Error("memory stats of " + device.str() + ": no caching allocator for " +
                c10::DeviceTypeName(device.type(), /*lower_case=*/true) +
                " in this process (is libtorch_cuda loaded, and has a tensor been made there?)");
  return allocator;
}

c10::DeviceIndex index_of(c10::Device device) { return device.has_index() ? device.index() : 0; }

}  // namespace

MemoryStats memory_stats(c10::Device device) {
  if (device.is_cpu()) return memory_stats();
  const auto stats = device_allocator(device)->getDeviceStats(index_of(device));
  const auto& bytes =
      stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  const auto& count =
      stats.allocation[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  return {bytes.current, bytes.peak, count.allocated};
}

void reset_peak_memory(c10::Device device) {
  if (device.is_cpu()) return reset_peak_memory();
  c10::DeviceAllocator* allocator = device_allocator(device);
  allocator->resetPeakStats(index_of(device));
  allocator->resetAccumulatedStats(index_of(device));
}

}  // namespace aotgrad
