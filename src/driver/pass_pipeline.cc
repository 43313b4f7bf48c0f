// aotgrad: the pass pipeline -- stages in order, with verification, graph logs, timing and the
// compile cache.
#include "aotgrad/driver/pass_pipeline.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>

#include "aotgrad/driver/cache_key.h"
#include "aotgrad/driver/cache_store.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/printer.h"

namespace aotgrad {
namespace {

constexpr GraphSlot kSlots[] = {GraphSlot::kGraph, GraphSlot::kForward, GraphSlot::kBackward};

// A graph pass as a stage on one slot.
class PassStage : public Stage {
 public:
  PassStage(std::unique_ptr<Pass> pass, GraphSlot slot, std::string name)
      : pass_(std::move(pass)), slot_(slot), name_(name.empty() ? pass_->name() : name) {
    AOTGRAD_CHECK(pass_ != nullptr, "pass_stage: null pass");
  }
  std::string_view name() const override { return name_; }
  bool run(CompileState& s) override {
    Graph* g = s.slot(slot_);
    AOTGRAD_CHECK(g != nullptr, "stage '", name_, "': the compilation has no ",
                  graph_slot_name(slot_), " graph");
    return pass_->run(*g);
  }
  int64_t changes() const override { return pass_->changes(); }
  std::vector<GraphSlot> writes() const override { return {slot_}; }
  std::string fingerprint() const override { return std::string(pass_->name()); }

 private:
  std::unique_ptr<Pass> pass_;
  GraphSlot slot_;
  std::string name_;
};

size_t slot_index(GraphSlot s) { return static_cast<size_t>(s); }

}  // namespace

const char* compile_kind_name(CompileKind kind) {
  switch (kind) {
    case CompileKind::kInference: return "inference";
    case CompileKind::kTraining: return "training";
    case CompileKind::kExport: return "export";
  }
  return "?";
}

const char* graph_slot_name(GraphSlot slot) {
  switch (slot) {
    case GraphSlot::kGraph: return "graph";
    case GraphSlot::kForward: return "forward";
    case GraphSlot::kBackward: return "backward";
  }
  return "?";
}

Graph* CompileState::slot(GraphSlot s) const {
  switch (s) {
    case GraphSlot::kGraph: return graph.get();
    case GraphSlot::kForward: return fw.get();
    case GraphSlot::kBackward: return bw.get();
  }
  return nullptr;
}

std::unique_ptr<Stage> pass_stage(std::unique_ptr<Pass> pass, GraphSlot slot, std::string name) {
  return std::make_unique<PassStage>(std::move(pass), slot, std::move(name));
}

PassPipeline::PassPipeline(PassPipelineOptions options) : options_(std::move(options)) {}
PassPipeline::~PassPipeline() = default;
PassPipeline::PassPipeline(PassPipeline&&) noexcept = default;
PassPipeline& PassPipeline::operator=(PassPipeline&&) noexcept = default;

PassPipeline& PassPipeline::add(std::unique_ptr<Stage> stage) {
  AOTGRAD_CHECK(stage != nullptr, "PassPipeline::add: null stage");
  stages_.push_back(std::move(stage));
  return *this;
}

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  return add(pass_stage(std::move(pass)));
}

PassPipeline& PassPipeline::add(std::string_view spec) { return add(make_pass(spec)); }

std::string PassPipeline::stage_names() const {
  std::string out;
  for (const auto& s : stages_) out += (out.empty() ? "" : ", ") + std::string(s->name());
  return out;
}

size_t PassPipeline::position(std::string_view anchor) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i]->name() == anchor) return i;
  throw Error("the pipeline has no stage '" + std::string(anchor) +
              "'; its stages: " + stage_names());
}

PassPipeline& PassPipeline::insert_after(std::string_view anchor, std::unique_ptr<Stage> stage) {
  AOTGRAD_CHECK(stage != nullptr, "PassPipeline::insert_after: null stage");
  size_t i = position(anchor);
  stages_.insert(stages_.begin() + static_cast<std::ptrdiff_t>(i + 1), std::move(stage));
  return *this;
}

PassPipeline& PassPipeline::insert_before(std::string_view anchor, std::unique_ptr<Stage> stage) {
  AOTGRAD_CHECK(stage != nullptr, "PassPipeline::insert_before: null stage");
  size_t i = position(anchor);
  stages_.insert(stages_.begin() + static_cast<std::ptrdiff_t>(i), std::move(stage));
  return *this;
}

void PassPipeline::run_stage(size_t i, CompileState& s) {
  Stage& stage = *stages_[i];
  const std::string name(stage.name());
  std::vector<GraphSlot> writes = stage.writes();
  PassStats st;
  st.pass = name;
  const Graph* first = writes.empty() ? nullptr : s.slot(writes[0]);
  st.nodes_before = first ? first->size() : 0;
  try {
    st.changed = stage.run(s);
  } catch (const Error& e) {
    if (!options_.errors_name_the_stage) throw;
    throw Error("pass '" + name + "': " + e.message(), e.loc());
  }
  st.changes = stage.changes();
  first = writes.empty() ? nullptr : s.slot(writes[0]);
  st.nodes_after = first ? first->size() : 0;
  // Recorded before the verifier runs, so a stage that left an invalid graph is in the stats.
  stats_.push_back(st);
  const size_t at = stats_.size() - 1;

  // Whether stage i is the last one that writes `slot`: its graph is then final.
  auto last_writer = [&](GraphSlot slot) {
    for (size_t k = i + 1; k < stages_.size(); ++k) {
      std::vector<GraphSlot> w = stages_[k]->writes();
      if (std::find(w.begin(), w.end(), slot) != w.end()) return false;
    }
    return true;
  };
  auto is_result = [&](GraphSlot slot) {
    return std::find(options_.results.begin(), options_.results.end(), slot) !=
           options_.results.end();
  };
  // A failure names the stage that last changed the graph.
  auto check = [&](const Graph& g, VerifyLevel level, const std::string& culprit) {
    try {
      verify(g, level);
    } catch (const Error& e) {
      if (!options_.errors_name_the_stage) throw;
      throw Error("pass '" + culprit + "' left an invalid graph: " + e.message(), e.loc());
    }
  };
  for (GraphSlot slot : writes) {
    const Graph* g = s.slot(slot);
    if (!g) continue;
    std::string& dirty = dirty_[slot_index(slot)];
    bool final_result = is_result(slot) && last_writer(slot);
    if (st.changed) dirty = name;
    if (!options_.verify) continue;
    if (final_result && !dirty.empty()) {
      check(*g, VerifyLevel::kFull, dirty);
      dirty.clear();
    } else if (st.changed && !final_result) {
      check(*g, options_.intermediate, name);
      if (options_.intermediate == VerifyLevel::kFull) dirty.clear();
    }
  }
  if (!options_.graph_logs.empty()) {
    const LogSettings& logs = log_settings();
    for (const auto& l : options_.graph_logs) {
      if (!(logs.*l.artifact) || std::find(writes.begin(), writes.end(), l.slot) == writes.end() ||
          !last_writer(l.slot))
        continue;
      if (const Graph* g = s.slot(l.slot)) log_graph(l.title + " " + std::to_string(s.aot_id), *g);
    }
  }
  if (log_settings().any()) stage.log(s, log_settings());
  if (options_.print_after_all) {
    for (GraphSlot slot : writes) {
      const Graph* g = s.slot(slot);
      if (!g) continue;
      *options_.print_after_all << "# after " << name;
      if (writes.size() > 1 || slot != GraphSlot::kGraph)
        *options_.print_after_all << " (" << graph_slot_name(slot) << ")";
      *options_.print_after_all << ": " << g->size() << " nodes, " << st.changes << " changes\n"
                                << print_graph(*g);
    }
  }
  if (options_.after_stage) options_.after_stage(stage, s);
  const StageTime& t = timer_.mark(name);
  stats_[at].seconds = t.wall_us * 1e-6;
  stats_[at].cpu_seconds = t.cpu_us * 1e-6;
}

bool PassPipeline::run(CompileState& s) {
  cache_hit_ = false;
  dirty_.assign(std::size(kSlots), std::string());
  timer_ = StageTimer();
  const size_t start = stats_.size();
  if (log_settings().any()) s.aot_id = next_aot_id();
  size_t first = 0;
  for (; first < stages_.size() && stages_[first]->before_cache(); ++first) run_stage(first, s);
  std::optional<CompileCache> cache;
  std::string key;
  if (!options_.cache_dir.empty()) {
    cache.emplace(options_.cache_dir);
    if (!cache->usable()) {
      CompileCache::bypass(": directory " + options_.cache_dir + " cannot be used");
      cache.reset();
    }
  }
  if (cache) {
    AOTGRAD_CHECK(s.graph != nullptr, "compile cache: the compilation has no input graph");
    key = compile_cache_key(s, *this, first, options_.version);
    if (!options_.read_cache) {
      CompileCache::bypass(" for key " + key + ": the caller needs the joint graph");
    } else if (cache->load(key, s)) {
      cache_hit_ = true;
      timer_.mark("cache_load");
      // The graphs the entry holds are logged as a compilation logs them (the joint graph is
      // not stored: AOTGRAD_LOGS=aot_joint_graph has nothing to show on a hit).
      const LogSettings& logs = log_settings();
      for (const auto& l : options_.graph_logs)
        if (logs.*l.artifact)
          if (const Graph* g = s.slot(l.slot))
            log_graph(l.title + " " + std::to_string(s.aot_id) + " (from the compile cache)", *g);
      return false;
    }
  }
  for (size_t i = first; i < stages_.size(); ++i) run_stage(i, s);
  if (cache) cache->store(key, options_.version, s);
  bool any = false;
  for (size_t i = start; i < stats_.size(); ++i) any = any || stats_[i].changed;
  return any;
}

bool PassPipeline::run(Graph& g) {
  CompileState s;
  s.graph = g.clone();
  bool changed = run(s);
  if (changed) assign_graph(g, *s.graph);
  return changed;
}

std::string PassPipeline::stats_table() const {
  size_t width = 4;
  for (const PassStats& s : stats_) width = std::max(width, s.pass.size());
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-*s %8s %8s %8s %10s\n", static_cast<int>(width), "pass",
                "before", "after", "changes", "ms");
  out += line;
  for (const PassStats& s : stats_) {
    std::snprintf(line, sizeof line, "%-*s %8zu %8zu %8lld %10.3f\n", static_cast<int>(width),
                  s.pass.c_str(), s.nodes_before, s.nodes_after, static_cast<long long>(s.changes),
                  s.seconds * 1e3);
    out += line;
  }
  return out;
}

}  // namespace aotgrad
