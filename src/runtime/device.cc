// aotgrad: loading libtorch's CUDA backend on demand (runtime/device.h).
#include "aotgrad/runtime/device.h"

#include <dlfcn.h>
#include <torch/cuda.h>

#include <mutex>
#include <string>

namespace aotgrad {

bool cuda_available() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Beside the libtorch_cpu.so this process loaded (torch::cuda::is_available lives there). A
    // CPU-only libtorch has no such library, and then CUDA stays unavailable. The handle is kept
    // for the life of the process, as a linked library's would be.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&torch::cuda::is_available), &info) == 0 || !info.dli_fname)
      return;
    std::string path = info.dli_fname;
    path = path.substr(0, path.find_last_of('/') + 1) + "libtorch_cuda.so";
    (void)dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  });
  return torch::cuda::is_available();
}

}  // namespace aotgrad
