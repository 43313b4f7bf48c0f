// aotgrad: counts of how provided ops got their facts.
#include "aotgrad/ops/provider_stats.h"

#include <array>
#include <atomic>

namespace aotgrad {
namespace {

std::array<std::atomic<int64_t>, 9> g_events{};

int64_t get(ProviderEvent e) { return g_events[static_cast<size_t>(e)].load(); }

}  // namespace

void count_provider_event(ProviderEvent e) {
  g_events[static_cast<size_t>(e)].fetch_add(1, std::memory_order_relaxed);
}

OpProviderStats op_provider_stats() {
  OpProviderStats s;
  s.ops_provided = get(ProviderEvent::kOpProvided);
  s.meta_kernel = get(ProviderEvent::kMetaKernel);
  s.meta_cpu_kernel = get(ProviderEvent::kMetaCpuKernel);
  s.meta_cache_hits = get(ProviderEvent::kMetaCacheHit);
  s.traced_derivatives = get(ProviderEvent::kTracedDerivative);
  s.derivative_cache_hits = get(ProviderEvent::kDerivativeCacheHit);
  s.traced_decompositions = get(ProviderEvent::kTracedDecomposition);
  s.decomposition_cache_hits = get(ProviderEvent::kDecompositionCacheHit);
  s.eager_backwards = get(ProviderEvent::kEagerBackward);
  return s;
}

}  // namespace aotgrad
