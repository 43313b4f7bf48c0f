// aotgrad: compile cache keys, the build id and the op registry's fingerprint.
#include "aotgrad/driver/cache_key.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include "aotgrad/driver/cache_entry.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/sha256.h"

namespace aotgrad {
namespace {

// The graph's text (recompute tags included, as `# recompute=` comments), and what the text does
// not show but a compilation reads: placeholders' requires_grad, the capture's NodeInfo marks.
void append_graph(std::string& out, const Graph& g) {
  std::string text = print_graph(g);
  out += "graph " + std::to_string(text.size()) + "\n" + text;
  out += "placeholder_requires_grad";
  for (const Node* n : g.placeholders())
    out += n->meta().is_tensor() && n->meta().tensor.requires_grad ? " 1" : " 0";
  out += "\n";
  // The capture's marks (reads and writes under torch.no_grad), by node position.
  out += "capture_marks";
  size_t i = 0;
  for (const Node* n : g.nodes()) {
    const NodeInfo& info = n->info();
    if (info.no_grad_read || info.hidden_write || info.no_grad_view_requires_grad)
      out += " " + std::to_string(i) + ":" + std::to_string(info.no_grad_read) +
             std::to_string(info.hidden_write) + std::to_string(info.no_grad_view_requires_grad);
    ++i;
  }
  out += "\n";
}

// Size and modification time of a file, "" when it cannot be read.
std::string file_identity(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) return "";
  return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

const std::string& compile_cache_build_id() {
  static const std::string id = [] {
    // The running executable, and the shared library holding this code when it is one.
    std::string out = file_identity("/proc/self/exe");
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&file_identity), &info) != 0 && info.dli_fname &&
        std::string_view(info.dli_fname).find(".so") != std::string_view::npos)
      out += " " + file_identity(info.dli_fname);
    return out;
  }();
  return id;
}

const std::string& op_registry_fingerprint() {
  static const std::string fp = [] {
    std::string all;
    for (const OpDef* op : aten_ops().all()) {
      all += op->schema.text + "|" + std::to_string(op->tags) + "|" + (op->meta ? "m" : "") +
             (op->derivative ? "d" : "") + (op->non_differentiable ? "n" : "") +
             (op->decomposition ? "x" : "") + "|" + op->functional_variant + "|" +
             op->inplace_variant + "|" + op->scatter_inverse + "\n";
    }
    return sha256_hex(all);
  }();
  return fp;
}

std::string compile_cache_key(const CompileState& s, const PassPipeline& pipeline,
                              size_t first_stage, std::string_view version) {
  std::string m = "aotgrad compile cache key\nformat " + std::to_string(kCompileCacheFormat) +
                  "\nkind " + compile_kind_name(s.kind) + "\nversion " + std::string(version) +
                  "\nbuild " + compile_cache_build_id() + "\nregistry " +
                  op_registry_fingerprint() + "\n";
  if (s.kind == CompileKind::kTraining) {
    m += "requires_grad";
    for (bool b : s.requires_grad) m += b ? " 1" : " 0";
    m += "\n";
  }
  m += "options " + std::to_string(pipeline.options().options_key.size()) + "\n" +
       pipeline.options().options_key;
  const auto& stages = pipeline.stages();
  for (size_t i = first_stage; i < stages.size(); ++i)
    m += "stage " + std::string(stages[i]->name()) + " " + stages[i]->fingerprint() + "\n";
  append_graph(m, *s.graph);
  return sha256_hex(m);
}

}  // namespace aotgrad
