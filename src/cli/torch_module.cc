// aotgrad: loading the command line's libtorch module on demand.
#include "torch_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "aotgrad/ops/registry.h"
#include "aotgrad/support/error.h"

namespace aotgrad::cli {
namespace {

// The directory of the running executable ("" when /proc cannot say).
std::string executable_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

const TorchModule& load() {
  std::string dir = executable_dir();
  // The build tree has the module beside the executable; an installation has it in
  // <libdir>/aotgrad, AOTGRAD_TORCH_MODULE_RELDIR from <bindir>.
  std::vector<std::string> candidates = {dir + "/aotgrad_torch.so",
                                         dir + "/" AOTGRAD_TORCH_MODULE_RELDIR "/aotgrad_torch.so"};
  std::string tried;
  for (const std::string& path : candidates) {
    if (::access(path.c_str(), F_OK) != 0) {
      tried += "\n  " + path + ": not found";
      continue;
    }
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = ::dlerror();
      tried += "\n  " + path + ": " + (why ? why : "cannot be loaded");
      continue;
    }
    auto entry = reinterpret_cast<const TorchModule* (*)()>(::dlsym(lib, "aotgrad_torch_module"));
    const TorchModule* m = entry ? entry() : nullptr;
    if (!m || m->abi != kTorchModuleAbi || !m->run || !m->calibrate) {
      tried += "\n  " + path + ": not a module of this aotgrad build";
      continue;
    }
    return *m;
  }
  throw Error(
      "this command runs graphs on libtorch, whose part of aotgrad (aotgrad_torch.so) could "
      "not be loaded:" +
      tried);
}

// Loads the module on the first op it is asked for; the module's runtime then installs libtorch's
// own provider, to which this one forwards.
class LazyLibtorchOps final : public OpProvider {
 public:
  std::unique_ptr<OpDef> provide(const std::string& name) const override {
    torch_module();
    const OpProvider* p = installed_op_provider();
    if (!p || p == this)
      throw Error("op '" + name + "': aotgrad_torch.so loaded but installed no op provider");
    return p->provide(name);
  }
  std::string source() const override { return "libtorch's dispatcher"; }
};

}  // namespace

void install_lazy_libtorch_ops() {
  static const LazyLibtorchOps lazy;
  if (!installed_op_provider()) install_op_provider(&lazy);
}

const TorchModule& torch_module() {
  static const TorchModule& m = load();
  return m;
}

}  // namespace aotgrad::cli
