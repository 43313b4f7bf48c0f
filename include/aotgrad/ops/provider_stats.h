// aotgrad: counts of how ops the registry does not declare got their facts (std only, so the
// command line reports them without loading libtorch).
#pragma once

#include <cstdint>

namespace aotgrad {

/// Process-wide counts of how provided ops got their metadata, derivatives and decompositions
/// (`aotgrad compile --stats=json` reports them as "op_provider").
struct OpProviderStats {
  int64_t ops_provided = 0;           // OpDefs derived from libtorch schemas
  int64_t meta_kernel = 0;            // metadata from libtorch's Meta kernel
  int64_t meta_cpu_kernel = 0;        // metadata from the CPU kernel run on zeros
  int64_t meta_cache_hits = 0;        // metadata found in the cache
  int64_t traced_derivatives = 0;     // backward graphs traced through libtorch's autograd
  int64_t derivative_cache_hits = 0;  // traced backward graphs found in the cache
  int64_t traced_decompositions = 0;  // CompositeImplicitAutograd kernels traced
  int64_t decomposition_cache_hits = 0;
  int64_t eager_backwards = 0;  // derivatives left to libtorch's autograd at run time
};
OpProviderStats op_provider_stats();

/// What the provider's units count (one OpProviderStats field each).
enum class ProviderEvent {
  kOpProvided,
  kMetaKernel,
  kMetaCpuKernel,
  kMetaCacheHit,
  kTracedDerivative,
  kDerivativeCacheHit,
  kTracedDecomposition,
  kDecompositionCacheHit,
  kEagerBackward,
};
/// Thread-safe.
void count_provider_event(ProviderEvent e);

}  // namespace aotgrad
