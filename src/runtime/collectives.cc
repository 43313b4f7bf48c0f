// aotgrad: the functional collectives' kernels -- issue on a c10d process group, wait by tensor.
//
// Note [Gather and reduce-scatter point to point on Gloo]
// libtorch 1.13's ProcessGroupGloo has neither _allgather_base nor reduce_scatter: its allgather
// receives into a flat buffer of the whole result and copies it out (twice the result's memory),
// and reduce_scatter as an all-to-all receives every rank's whole input (the input's size again).
// Sharded training gathers every parameter and reduce-scatters every gradient, so on Gloo both are
// point to point instead (ProcessGroupGloo::send / recv, which need no worker thread): a gather
// sends this rank's block to every peer and receives each peer's block straight into its place in
// the result; a reduce-scatter sends each peer its block of the input and receives the peers'
// blocks of this rank's (the first into the result itself, the rest into one buffer of N - 2
// blocks), reduced in rank order when waited. Every rank issues the same collectives in the same
// order, so a counter per group gives each one the same tag on every rank. Other backends (NCCL,
// a user's) take the generic allgather and all-to-all.
#include "aotgrad/runtime/collectives.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/runtime/aten_call.h"
#include "aotgrad/runtime/process_group.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

// A collective in flight: its work, what finishes its result once the work is done, and the
// result itself (which keeps the storage its entry is keyed by alive).
struct Pending {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;  // all of them make the collective
  std::function<void()> finish;
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

// Note [Gather and reduce-scatter point to point on Gloo].
bool point_to_point(const Group& g) {
  return dynamic_cast<c10d::ProcessGroupGloo*>(g.pg.get()) != nullptr;
}

// The tag of the next point-to-point collective on `group` (the same on every rank); above the
// small tags users pick.
int next_tag(const std::string& group) {
  static std::mutex mu;
  static std::map<std::string, uint32_t> counters;
  std::lock_guard<std::mutex> lock(mu);
  return static_cast<int>((1u << 30) + (counters[group]++ % (1u << 29)));
}

// `out` combined elementwise with `x` by `op` (sum and avg add; avg divides once, afterwards).
void combine(at::Tensor& out, const at::Tensor& x, const std::string& op) {
  if (op == "sum" || op == "avg")
    out.add_(x);
  else if (op == "product")
    out.mul_(x);
  else if (op == "min")
    at::minimum_out(out, out, x);
  else if (op == "max")
    at::maximum_out(out, out, x);
  else if (op == "band")
    out.bitwise_and_(x);
  else if (op == "bor")
    out.bitwise_or_(x);
  else
    out.bitwise_xor_(x);
}

void check_group_size(const Group& g, int64_t group_size, const char* op, const std::string& name) {
  if (group_size != g.pg->getSize())
    throw Error(std::string(op) + ": group_size " + std::to_string(group_size) +
                " is not the size of process group '" + name + "' (" +
                std::to_string(g.pg->getSize()) + " ranks)");
}

// The c10d reduction a reduce_op names; avg is a sum the result divides afterwards (Gloo 1.13
// has no AVG).
c10d::ReduceOp reduce_op_of(const std::string& op) {
  using R = c10d::ReduceOp::RedOpType;
  static const std::unordered_map<std::string, R> kOps = {
      {"sum", R::SUM}, {"avg", R::SUM},   {"product", R::PRODUCT}, {"min", R::MIN},
      {"max", R::MAX}, {"band", R::BAND}, {"bor", R::BOR},         {"bxor", R::BXOR}};
  auto it = kOps.find(op);
  if (it == kOps.end()) throw Error("Unrecognized reduce_op: '" + op + "'");
  return c10d::ReduceOp(it->second);
}

void divide_by(at::Tensor& t, int64_t n) {
  if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))
    t.div_(static_cast<double>(n));
  else
    t.div_(n, "trunc");
}

// Reduces the leading dimension of `blocks` ([n, ...]) into `out` with `op`.
void reduce_blocks(const at::Tensor& blocks, const std::string& op, at::Tensor& out) {
  if (op == "sum" || op == "avg") {
    at::sum_out(out, blocks, {0});
    if (op == "avg") divide_by(out, blocks.size(0));
  } else if (op == "product") {
    at::prod_out(out, blocks, 0);
  } else if (op == "min") {
    at::amin_out(out, blocks, {0});
  } else if (op == "max") {
    at::amax_out(out, blocks, {0});
  } else {
    out.copy_(blocks[0]);
    for (int64_t i = 1; i < blocks.size(0); ++i) {
      if (op == "band")
        out.bitwise_and_(blocks[i]);
      else if (op == "bor")
        out.bitwise_or_(blocks[i]);
      else
        out.bitwise_xor_(blocks[i]);
    }
  }
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

// Runs `issue` (which starts the work), turning a c10d error into an Error naming the collective.
template <typename F>
c10::intrusive_ptr<c10d::Work> issue(const std::string& what, const std::string& group, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(what + " could not start: " + what_of(e) + failure_cause(group));
  }
}

// Issues the all_reduce of `out` in place; wait_tensor of `out` waits for it.
void issue_all_reduce(const at::Tensor& out, const std::string& reduce_op,
                      const std::string& group_name, const char* name) {
  Group g = group(group_name);
  std::string what = g.describe(name, group_name);
  c10d::AllreduceOptions opts;
  opts.reduceOp = reduce_op_of(reduce_op);
  std::vector<at::Tensor> bufs{out.is_complex() ? at::view_as_real(out) : out};
  Pending p;
  p.works.push_back(issue(what, group_name, [&] { return g.pg->allreduce(bufs, opts); }));
  if (reduce_op == "avg") {
    int64_t n = g.pg->getSize();
    p.finish = [t = at::Tensor(out), n]() mutable { divide_by(t, n); };
  }
  p.result = out;
  p.what = what;
  p.group = group_name;
  add_pending(std::move(p));
}

at::Tensor all_reduce(const at::Tensor& input, std::string reduce_op, std::string group_name) {
  at::Tensor out = input.clone(at::MemoryFormat::Contiguous);
  issue_all_reduce(out, reduce_op, group_name, "all_reduce");
  return out;
}

// The in-place variant (PyTorch 2.x's all_reduce_): the data-parallel buckets, which the graph
// owns, are reduced where they are instead of into a clone.
at::Tensor& all_reduce_inplace(at::Tensor& input, std::string reduce_op, std::string group_name) {
  if (!input.is_contiguous())
    throw Error("all_reduce_: the input is not contiguous (strides " + c10::str(input.strides()) +
                ")");
  issue_all_reduce(input, reduce_op, group_name, "all_reduce_");
  return input;
}

// Every rank's input, concatenated along dim 0: each block received where it belongs in the
// output (Note [Gather and reduce-scatter point to point on Gloo]).
at::Tensor all_gather_into_tensor(const at::Tensor& input, int64_t group_size,
                                  std::string group_name) {
  Group g = group(group_name);
  check_group_size(g, group_size, "all_gather_into_tensor", group_name);
  std::string what = g.describe("all_gather_into_tensor", group_name);
  at::Tensor in = input.contiguous();
  std::vector<int64_t> sizes = in.sizes().vec();
  if (sizes.empty())
    sizes.push_back(group_size);
  else
    sizes[0] *= group_size;
  at::Tensor out = at::empty(sizes, in.options());
  at::Tensor in_real = in.is_complex() ? at::view_as_real(in) : in;
  at::Tensor out_real = out.is_complex() ? at::view_as_real(out) : out;
  at::Tensor blocks = out_real.view([&] {
    std::vector<int64_t> s = in_real.sizes().vec();
    s.insert(s.begin(), group_size);
    return s;
  }());
  Pending p;
  if (point_to_point(g)) {
    const int rank = g.pg->getRank(), tag = next_tag(group_name);
    blocks[rank].copy_(in_real);
    for (int peer = 0; peer < static_cast<int>(group_size); ++peer) {
      if (peer == rank) continue;
      std::vector<at::Tensor> to{in_real}, from{blocks[peer]};
      p.works.push_back(issue(what, group_name, [&] { return g.pg->send(to, peer, tag); }));
      p.works.push_back(issue(what, group_name, [&] { return g.pg->recv(from, peer, tag); }));
    }
  } else {
    std::vector<at::Tensor> inputs{in_real};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int64_t r = 0; r < group_size; ++r) outputs[0].push_back(blocks[r]);
    p.works.push_back(issue(what, group_name, [&] { return g.pg->allgather(outputs, inputs); }));
  }
  p.result = out;
  p.what = what;
  p.group = group_name;
  add_pending(std::move(p));
  return out;
}

// This rank's block of dim 0 of every rank's input, reduced when waited for (Note [Gather and
// reduce-scatter point to point on Gloo]).
at::Tensor reduce_scatter_tensor(const at::Tensor& input, std::string reduce_op, int64_t group_size,
                                 std::string group_name) {
  Group g = group(group_name);
  check_group_size(g, group_size, "reduce_scatter_tensor", group_name);
  reduce_op_of(reduce_op);
  std::string what = g.describe("reduce_scatter_tensor", group_name);
  if (input.dim() == 0 || input.size(0) % group_size != 0)
    throw Error(
        "reduce_scatter_tensor: the first dimension of the input must be divisible by "
        "the group size (" +
        std::to_string(group_size) + ")");
  at::Tensor in = input.contiguous();
  at::Tensor in_real = in.is_complex() ? at::view_as_real(in) : in;
  std::vector<int64_t> sizes = in.sizes().vec();
  sizes[0] /= group_size;
  at::Tensor out = at::empty(sizes, in.options());
  at::Tensor out_real = out.is_complex() ? at::view_as_real(out) : out;
  std::vector<int64_t> block_sizes = out_real.sizes().vec();
  block_sizes.insert(block_sizes.begin(), group_size);
  at::Tensor blocks = in_real.view(block_sizes);
  Pending p;
  if (group_size == 1) {
    out_real.copy_(blocks[0]);
  } else if (point_to_point(g)) {
    // Each peer's block of this rank's: the first peer's into the result, the others' into
    // `others` (Note [Gather and reduce-scatter point to point on Gloo]).
    const int rank = g.pg->getRank(), tag = next_tag(group_name);
    const int first = rank == 0 ? 1 : 0;
    block_sizes[0] = group_size - 2;
    at::Tensor others = at::empty(block_sizes, out_real.options());
    for (int peer = 0, k = 0; peer < static_cast<int>(group_size); ++peer) {
      if (peer == rank) continue;
      std::vector<at::Tensor> to{blocks[peer]}, from{peer == first ? out_real : others[k++]};
      p.works.push_back(issue(what, group_name, [&] { return g.pg->send(to, peer, tag); }));
      p.works.push_back(issue(what, group_name, [&] { return g.pg->recv(from, peer, tag); }));
    }
    p.finish = [blocks, others, out_real, reduce_op, rank, first, group_size]() mutable {
      for (int r = 0, k = 0; r < static_cast<int>(group_size); ++r) {
        if (r == first) continue;
        combine(out_real, r == rank ? blocks[r] : others[k++], reduce_op);
      }
      if (reduce_op == "avg") divide_by(out_real, group_size);
    };
  } else {
    // An all-to-all (block r to rank r), then the reduction of the received blocks when waited.
    at::Tensor received = at::empty_like(in_real, at::MemoryFormat::Contiguous);
    std::vector<int64_t> counts;  // empty: equal blocks
    p.works.push_back(issue(
        what, group_name, [&] { return g.pg->alltoall_base(received, in_real, counts, counts); }));
    p.finish = [received, out_real, reduce_op, block_sizes]() mutable {
      reduce_blocks(received.view(block_sizes), reduce_op, out_real);
    };
  }
  p.result = out;
  p.what = what;
  p.group = group_name;
  add_pending(std::move(p));
  return out;
}

at::Tensor broadcast(const at::Tensor& input, int64_t src, std::string group_name) {
  Group g = group(group_name);
  if (src < 0 || src >= g.pg->getSize())
    throw Error("broadcast: src " + std::to_string(src) + " is not a rank of process group '" +
                group_name + "' (" + std::to_string(g.pg->getSize()) + " ranks)");
  std::string what = g.describe("broadcast", group_name);
  c10d::BroadcastOptions opts;
  opts.rootRank = src;
  at::Tensor out = input.clone(at::MemoryFormat::Contiguous);
  std::vector<at::Tensor> bufs{out.is_complex() ? at::view_as_real(out) : out};
  Pending p;
  p.works.push_back(issue(what, group_name, [&] { return g.pg->broadcast(bufs, opts); }));
  p.result = out;
  p.what = what;
  p.group = group_name;
  add_pending(std::move(p));
  return out;
}

at::Tensor wait_tensor(const at::Tensor& tensor) {
  std::optional<Pending> p = take_pending(tensor);
  if (!p) return tensor;
  Clock::time_point start = Clock::now();
  try {
    for (const auto& w : p->works) w->wait();
  } catch (const std::exception& e) {
    throw Error(p->what + " failed: " + what_of(e) + failure_cause(p->group));
  }
  if (p->finish) p->finish();
  if (log_settings().collectives) {
    Clock::time_point end = Clock::now();
    char buf[128];
    std::snprintf(buf, sizeof buf, ": %.3f ms after it was issued, %.3f ms of them waited",
                  ms_between(p->issued, end), ms_between(start, end));
    log_text("collectives: waited " + p->what + buf);
  }
  return tensor;
}

// Whether the _c10d_functional kernels are aotgrad's (libtorch 1.13 has none), which check, log
// and name their errors themselves; call_collective does it around libtorch 2's.
std::atomic<bool> g_own_kernels{false};

}  // namespace

void register_collective_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (c10::Dispatcher::singleton().findSchema({"_c10d_functional::all_reduce", ""})) return;
    g_own_kernels = true;
    static torch::Library lib(torch::Library::DEF, "_c10d_functional", c10::nullopt, __FILE__,
                              __LINE__);
    auto k = c10::DispatchKey::CompositeExplicitAutograd;
    lib.def("all_reduce(Tensor input, str reduce_op, str group_name) -> Tensor",
            torch::dispatch(k, TORCH_FN(all_reduce)));
    lib.def("all_reduce_(Tensor(a!) input, str reduce_op, str group_name) -> Tensor(a!)",
            torch::dispatch(k, TORCH_FN(all_reduce_inplace)));
    lib.def("all_gather_into_tensor(Tensor input, int group_size, str group_name) -> Tensor",
            torch::dispatch(k, TORCH_FN(all_gather_into_tensor)));
    lib.def(
        "reduce_scatter_tensor(Tensor input, str reduce_op, int group_size, str group_name) -> "
        "Tensor",
        torch::dispatch(k, TORCH_FN(reduce_scatter_tensor)));
    lib.def("broadcast(Tensor input, int src, str group_name) -> Tensor",
            torch::dispatch(k, TORCH_FN(broadcast)));
    lib.def("wait_tensor(Tensor tensor) -> Tensor", torch::dispatch(k, TORCH_FN(wait_tensor)));
  });
}

size_t pending_collectives() {
  Works& w = works();
  std::lock_guard<std::mutex> lock(w.mu);
  return w.by_storage.size();
}

std::vector<c10::IValue> call_collective(const AtenOp& op, std::vector<c10::IValue> stack) {
  if (g_own_kernels) return op.call_boxed(std::move(stack));
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
