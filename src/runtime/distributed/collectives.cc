// aotgrad: libtorch's functional collectives (_c10d_functional::*) as the interpreter calls them --
// aotgrad's group-size check, logs and errors around libtorch's own kernels.
#include "aotgrad/runtime/distributed/collectives.h"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/runtime/distributed/process_group.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

// A collective in flight: its result (which keeps the storage its entry is keyed by alive) and what
// its log lines and errors say of it.
struct Pending {
  at::Tensor result;
  std::string what;  // "all_reduce on process group '0' (rank 1 of 2)"
  std::string group;
  std::chrono::steady_clock::time_point issued;
};

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// AOTGRAD_LOGS=collectives: "collectives: issued all_reduce on process group '0' (rank 0 of 2):
// f32[1234], 4936 bytes".
void log_issue(const Pending& p) {
  if (!log_settings().collectives) return;
  const at::Tensor& t = p.result;
  std::string sizes;
  for (int64_t s : t.sizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
  log_text("collectives: issued " + p.what + ": " + std::string(c10::toString(t.scalar_type())) +
           "[" + sizes + "], " + std::to_string(t.nbytes()) + " bytes");
}

// Pending collectives by the storage of their result (as Functional.cpp's WorkRegistry).
struct Works {
  std::mutex mu;
  std::unordered_map<const c10::StorageImpl*, Pending> by_storage;
};

Works& works() {
  static Works* w = new Works();
  return *w;
}

void add_pending(Pending p) {
  p.issued = Clock::now();
  log_issue(p);
  const c10::StorageImpl* key = p.result.storage().unsafeGetStorageImpl();
  Works& w = works();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!w.by_storage.emplace(key, std::move(p)).second)
    throw Error("a collective is already pending on this tensor's storage");
}

std::optional<Pending> take_pending(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return std::nullopt;
  Works& w = works();
  std::lock_guard<std::mutex> lock(w.mu);
  auto it = w.by_storage.find(t.storage().unsafeGetStorageImpl());
  if (it == w.by_storage.end()) return std::nullopt;
  Pending p = std::move(it->second);
  w.by_storage.erase(it);
  return p;
}

std::string what_of(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

struct Group {
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::string describe(const char* op, const std::string& name) const {
    return std::string(op) + " on process group '" + name + "' (rank " +
           std::to_string(pg->getRank()) + " of " + std::to_string(pg->getSize()) + ")";
  }
};

Group group(const std::string& name) { return {resolve_process_group(name)}; }

void check_group_size(const Group& g, int64_t group_size, const char* op, const std::string& name) {
  if (group_size != g.pg->getSize())
    throw Error(std::string(op) + ": group_size " + std::to_string(group_size) +
                " is not the size of process group '" + name + "' (" +
                std::to_string(g.pg->getSize()) + " ranks)");
}

// Why a collective of `group` failed, as far as this rank can tell: the ranks that have exited
// (exited_ranks), or what else to check.
std::string failure_cause(const std::string& group) {
  std::string gone = exited_ranks(group);
  if (!gone.empty())
    return " (" + gone + (gone.find(", ") == std::string::npos ? " has" : " have") +
           " exited: the job cannot go on without it)";
  return " (another rank exited, is unreachable, or did not issue the same collective within the "
         "group's timeout)";
}

}  // namespace

size_t pending_collectives() {
  Works& w = works();
  std::lock_guard<std::mutex> lock(w.mu);
  return w.by_storage.size();
}

std::vector<c10::IValue> call_collective(const AtenOp& op, std::vector<c10::IValue> stack) {
  const std::vector<SchemaArg>& args = op.def().schema.args;
  const std::string name = op.def().base_name;
  if (name == "wait_tensor") {
    std::optional<Pending> p;
    if (!stack.empty() && stack[0].isTensor()) p = take_pending(stack[0].toTensor());
    Clock::time_point start = Clock::now();
    std::vector<c10::IValue> results;
    try {
      results = op.call_boxed(std::move(stack));
    } catch (const std::exception& e) {
      if (!p) throw;
      throw Error(p->what + " failed: " + what_of(e) + failure_cause(p->group));
    }
    if (p && log_settings().collectives) {
      Clock::time_point end = Clock::now();
      char buf[128];
      std::snprintf(buf, sizeof buf, ": %.3f ms after it was issued, %.3f ms of them waited",
                    ms_between(p->issued, end), ms_between(start, end));
      log_text("collectives: waited " + p->what + buf);
    }
    return results;
  }
  std::string group_name;
  std::optional<int64_t> group_size;
  for (size_t i = 0; i < args.size() && i < stack.size(); ++i) {
    if (args[i].name == "group_name" && stack[i].isString()) group_name = stack[i].toStringRef();
    if (args[i].name == "group_size" && stack[i].isInt()) group_size = stack[i].toInt();
  }
  if (group_name.empty()) return op.call_boxed(std::move(stack));
  Group g = group(group_name);
  if (group_size) check_group_size(g, *group_size, name.c_str(), group_name);
  Pending p;
  p.what = g.describe(name.c_str(), group_name);
  p.group = group_name;
  std::vector<c10::IValue> results;
  try {
    results = op.call_boxed(std::move(stack));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(p.what + " could not start: " + what_of(e) + failure_cause(group_name));
  }
  if (!results.empty() && results[0].isTensor()) {
    p.result = results[0].toTensor();
    add_pending(std::move(p));
  }
  return results;
}

}  // namespace aotgrad
