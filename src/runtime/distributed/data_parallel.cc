// aotgrad: data-parallel training's compile-time collectives on c10d: the group's size, the
// parameters' broadcast from rank 0 and the cross-rank compile check.
#include "aotgrad/runtime/distributed/data_parallel.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "aotgrad/ir/error.h"
#include "aotgrad/runtime/distributed/process_group.h"
#include "aotgrad/support/sha256.h"

namespace aotgrad {
namespace {

std::string what_of(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

// Runs one collective to completion, turning a c10d failure into an Error naming it.
template <typename F>
void run(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, const std::string& group,
         const std::string& what, F&& issue) {
  try {
    c10::intrusive_ptr<c10d::Work> work = issue();
    work->wait();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string gone = exited_ranks(group);
    throw Error(what + " on process group '" + group + "' (rank " + std::to_string(pg->getRank()) +
                " of " + std::to_string(pg->getSize()) + ") failed: " + what_of(e) +
                (gone.empty()
                     ? " (another rank exited, is unreachable, or did not reach the same "
                       "point within the group's timeout)"
                     : " (" + gone + (gone.find(", ") == std::string::npos ? " has" : " have") +
                           " exited: the job cannot go on without it)"));
  }
}

// Every rank's `local` (a 1-d uint8 tensor of the same size on every rank).
std::vector<at::Tensor> all_gather(const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
                                   const std::string& group, const std::string& what,
                                   const at::Tensor& local) {
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < pg->getSize(); ++r) out[0].push_back(at::empty_like(local));
  std::vector<at::Tensor> in{local};
  run(pg, group, what, [&] { return pg->allgather(out, in); });
  return out[0];
}

at::Tensor bytes_of(const std::string& s) {
  at::Tensor t = at::empty({static_cast<int64_t>(s.size())}, at::kByte);
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string string_of(const at::Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()));
}

// Every rank's `text` (of any length; a collective).
std::vector<std::string> all_gather_text(const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
                                         const std::string& group, const std::string& what,
                                         const std::string& text) {
  at::Tensor len = at::full({1}, static_cast<int64_t>(text.size()), at::kLong);
  int64_t longest = 0;
  for (const at::Tensor& t : all_gather(pg, group, what, len))
    longest = std::max(longest, t.item<int64_t>());
  if (longest == 0) return std::vector<std::string>(static_cast<size_t>(pg->getSize()));
  std::string padded = text;
  padded.resize(static_cast<size_t>(longest), '\0');
  std::vector<std::string> out;
  for (const at::Tensor& t : all_gather(pg, group, what, bytes_of(padded))) {
    std::string s = string_of(t);
    s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
    out.push_back(std::move(s));
  }
  return out;
}

// The first line where `a` (rank `ra`'s) and `b` (rank `rb`'s) differ, each shown from a little
// before the first column that differs: "first difference, line 7: rank 0 has `...`; rank 1 has
// `...`".
std::string first_difference(const std::string& a, int ra, const std::string& b, int rb) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (ga && gb && la == lb) continue;
    // Each line from a little before the first column where they differ.
    size_t col = 0;
    while (col < la.size() && col < lb.size() && la[col] == lb[col]) ++col;
    auto shown = [col](bool got, std::string l) {
      if (!got) return std::string("no such line");
      size_t from = std::max(l.find_first_not_of(' '), col > 40 ? col - 40 : 0);
      std::string s = (from > l.find_first_not_of(' ') ? "..." : "") + l.substr(from, 120);
      if (l.size() > from + 120) s += "...";
      return "`" + s + "`";
    };
    return "first difference, line " + std::to_string(line) + ": rank " + std::to_string(ra) +
           " has " + shown(ga, la) + "; rank " + std::to_string(rb) + " has " + shown(gb, lb);
  }
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

GroupPlace process_group_place(const std::string& group) {
  c10::intrusive_ptr<c10d::ProcessGroup> pg = resolve_process_group(group);
  return {pg->getRank(), pg->getSize()};
}

void check_same_on_every_rank(const std::string& group,
                              const std::vector<std::pair<std::string, std::string>>& parts,
                              const std::string& context) {
  c10::intrusive_ptr<c10d::ProcessGroup> pg = resolve_process_group(group);
  if (pg->getSize() == 1) return;
  // Every rank sends as many digests: the count first, so a rank with other parts is named too.
  std::string digests = std::to_string(parts.size());
  digests.resize(64, ' ');
  for (const auto& [what, text] : parts) digests += sha256_hex(text);
  const size_t width = 64 * 17;  // at most 16 parts
  AOTGRAD_CHECK(parts.size() <= 16, "check_same_on_every_rank: at most 16 parts");
  digests.resize(width, ' ');
  std::vector<at::Tensor> all =
      all_gather(pg, group, context + ": the cross-rank compile check", bytes_of(digests));
  std::vector<std::string> of_rank;
  for (const at::Tensor& t : all) of_rank.push_back(string_of(t));
  std::string differ;
  for (size_t p = 0; p < parts.size(); ++p) {
    // Digests in the order of their first rank.
    std::vector<std::pair<std::string, std::vector<int>>> by_digest;
    for (size_t r = 0; r < of_rank.size(); ++r) {
      std::string d = of_rank[r].substr(64 * (p + 1), 64);
      auto it = std::find_if(by_digest.begin(), by_digest.end(),
                             [&](const auto& e) { return e.first == d; });
      if (it == by_digest.end()) it = by_digest.insert(by_digest.end(), {d, {}});
      it->second.push_back(static_cast<int>(r));
    }
    if (by_digest.size() == 1) continue;
    differ += "\n  the " + parts[p].first + " differs:";
    for (const auto& [d, ranks] : by_digest)
      differ += " " + ranks_text(ranks) + " " + (ranks.size() == 1 ? "has" : "have") + " sha256 " +
                d.substr(0, 12) + ";";
    differ.pop_back();
    // Every rank sees the same digests, so every rank gathers the texts that differ, and names the
    // first line where the first two versions differ.
    std::vector<std::string> texts = all_gather_text(
        pg, group, context + ": the cross-rank compile check's texts", parts[p].second);
    const int ra = by_digest[0].second.front(), rb = by_digest[1].second.front();
    std::string first =
        first_difference(texts[static_cast<size_t>(ra)], ra, texts[static_cast<size_t>(rb)], rb);
    if (!first.empty()) differ += "\n    " + first;
  }
  if (differ.empty()) return;
  throw Error(context + ": the ranks of process group '" + group +
              "' compiled different graphs (rank " + std::to_string(pg->getRank()) + " of " +
              std::to_string(pg->getSize()) + " reports):" + differ +
              "\n  every rank must run the same model on inputs of the same shapes (print the "
              "graphs with AOTGRAD_LOGS=aot_graphs on each rank to compare them)");
}

void broadcast_from_rank0(const std::string& group, const std::vector<at::Tensor>& tensors,
                          const std::vector<std::string>& names) {
  c10::intrusive_ptr<c10d::ProcessGroup> pg = resolve_process_group(group);
  if (pg->getSize() == 1 || tensors.empty()) return;
  // The tensors' layouts first: a rank with other tensors fails with their names.
  std::string layout;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    layout += (i < names.size() ? names[i] : std::to_string(i)) + ": " +
              std::string(c10::toString(t.scalar_type())) + " [";
    for (int64_t s : t.sizes()) layout += std::to_string(s) + ",";
    layout += "]\n";
  }
  check_same_on_every_rank(group, {{"list of tensors broadcast from rank 0", layout}},
                           "data parallel: the broadcast of the parameters");
  c10::NoGradGuard no_grad;
  std::map<int, std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < tensors.size(); ++i)
    by_dtype[static_cast<int>(tensors[i].scalar_type())].push_back(i);
  for (const auto& [dtype, idx] : by_dtype) {
    std::vector<at::Tensor> flat;
    // Gloo has no bool: bools go as bytes.
    for (size_t i : idx) {
      at::Tensor t = tensors[i].detach().reshape({-1});
      flat.push_back(t.scalar_type() == at::kBool ? t.view(at::kByte) : t);
    }
    at::Tensor buf = at::cat(flat);
    std::vector<at::Tensor> bufs{buf};
    c10d::BroadcastOptions opts;
    opts.rootRank = 0;
    run(pg, group, "data parallel: the broadcast of the parameters from rank 0",
        [&] { return pg->broadcast(bufs, opts); });
    if (pg->getRank() == 0) continue;
    int64_t at = 0;
    for (size_t i : idx) {
      at::Tensor t = tensors[i].detach();
      at::Tensor piece = buf.narrow(0, at, t.numel()).view(t.sizes());
      t.copy_(t.scalar_type() == at::kBool ? piece.view(at::kBool) : piece);
      at += t.numel();
    }
  }
}

}  // namespace aotgrad
