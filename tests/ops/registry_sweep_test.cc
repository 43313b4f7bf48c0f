// aotgrad: registry-wide invariants -- derivatives declared, in-place and view/scatter links
// complete, and the op facts the passes ask for (FLOPs, scratch, fill, identity, recompute class,
// collective) declared where the op's tags call for them.
//
// Which ops can produce a floating-point tensor is read from the op samples
// (tests/data/op_samples/*.txt): an op whose valid samples infer at least one floating tensor
// result can produce one. An op without an inferable sample falls back to its schema (any Tensor
// return counts), so that no op escapes the check by lacking samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../runtime/op_samples.h"
#include "aotgrad/ir/dtype.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

namespace os = op_samples;

bool has_floating_tensor(const ValueMeta& m) {
  if (m.is_tensor()) return is_floating(m.tensor.dtype) || is_complex(m.tensor.dtype);
  for (const ValueMeta& e : m.elems)
    if (has_floating_tensor(e)) return true;
  return false;
}

bool returns_tensor(const OpDef& op) {
  for (const SchemaArg& r : op.schema.returns)
    if (r.type.base == BaseType::Tensor) return true;
  return false;
}

// What the samples say about each op's results.
struct SampledOutputs {
  std::string floating_at;  // "pointwise.txt:12" of a sample with a floating tensor result
  int inferred = 0;         // samples whose metadata aotgrad infers
};

const std::map<std::string, SampledOutputs>& sampled_outputs() {
  static const std::map<std::string, SampledOutputs> result = [] {
    std::map<std::string, SampledOutputs> out;
    for (const auto& path : os::sample_files()) {
      os::SampleFile f = os::read_sample_file(path);
      for (const os::Sample& s : f.samples) {
        if (s.must_fail) continue;
        const OpDef* op = aten_ops().find(s.op_name);
        if (!op) continue;
        try {
          auto g = parse_graph(os::graph_text(s, op->short_name), aten_ops());
          const Node* n = g->find("result");
          if (!n) continue;
          SampledOutputs& so = out[op->name];
          ++so.inferred;
          if (so.floating_at.empty() && has_floating_tensor(n->meta()))
            so.floating_at = path.filename().string() + ":" + std::to_string(s.line);
        } catch (const Error&) {
          // A sample aotgrad rejects says nothing about the op's result dtypes (the meta sweep
          // reports it).
        }
      }
    }
    return out;
  }();
  return result;
}

TEST(Registry, EveryOpHasADerivativeOrIsNonDifferentiable) {
  const auto& sampled = sampled_outputs();
  std::vector<std::string> missing, both;
  size_t checked = 0;
  for (const OpDef* op : aten_ops().all()) {
    if (op->has_tag(kInplace)) continue;
    if (op->name == kCond) continue;  // differentiated per branch (transforms/cond_autograd.h)
    std::string why;
    auto it = sampled.find(op->name);
    if (it != sampled.end() && it->second.inferred > 0) {
      if (it->second.floating_at.empty()) continue;  // only integer/bool/non-tensor results
      why = "floating result at " + it->second.floating_at;
    } else {
      if (!returns_tensor(*op)) continue;
      why = "no inferable sample; the schema returns a Tensor";
    }
    ++checked;
    if (op->derivative && op->non_differentiable)
      both.push_back(op->short_name + " (" + why + ")");
    else if (!op->derivative && !op->non_differentiable &&
             !(op->has_tag(kCompositeImplicit) && op->decomposition))  // differentiated through it
      missing.push_back(op->short_name + " [" + tag_names(op->tags) + "] (" + why + ")");
  }
  std::string list;
  for (auto& m : missing) list += "\n    " + m;
  EXPECT_TRUE(missing.empty())
      << missing.size() << " of " << checked
      << " non-in-place ops that can return a floating-point tensor have "
         "neither a derivative rule, nor non_differentiable(), nor (composite) a decomposition:"
      << list;
  list.clear();
  for (auto& m : both) list += "\n    " + m;
  EXPECT_TRUE(both.empty()) << both.size()
                            << " ops have a derivative rule and are also marked "
                               "non_differentiable():"
                            << list;
}

// Every declared rule is its formula (parsed when the op was declared), and every name it uses
// resolves.
TEST(Registry, DerivativeRulesAreFormulas) {
  std::vector<std::string> bad;
  size_t rules = 0;
  for (const OpDef* op : aten_ops().all()) {
    if (!op->derivative) continue;
    ++rules;
    const DerivativeRule& r = *op->derivative;
    if (!r.program) bad.push_back(op->short_name + ": not a formula ('" + r.formula + "')");
    for (const std::string& n : unresolved_names(r, *op))
      bad.push_back(op->short_name + ": " + n + " in '" + r.formula + "'");
  }
  EXPECT_GT(rules, 100u);
  std::string list;
  for (auto& m : bad) list += "\n    " + m;
  EXPECT_TRUE(bad.empty()) << bad.size() << " derivative rules are incomplete:" << list;
}

TEST(Registry, InplaceOpsHaveFunctionalVariants) {
  std::vector<std::string> bad;
  for (const OpDef* op : aten_ops().all()) {
    if (!op->has_tag(kInplace)) continue;
    if (op->functional_variant.empty()) {
      bad.push_back(op->short_name + ": no functional variant (link it with .inplace(\"" +
                    op->short_name + "\") on the functional op)");
      continue;
    }
    const OpDef* f = aten_ops().find(op->functional_variant);
    if (!f) {
      bad.push_back(op->short_name + ": functional variant '" + op->functional_variant +
                    "' is not registered");
      continue;
    }
    if (f->has_tag(kInplace))
      bad.push_back(op->short_name + ": functional variant " + f->short_name +
                    " is itself tagged inplace");
    if (f->inplace_variant != op->name)
      bad.push_back(op->short_name + ": functional variant " + f->short_name + " links back to '" +
                    f->inplace_variant + "'");
    if (op->mutated_args().empty())
      bad.push_back(op->short_name + ": tagged inplace but its schema mutates nothing (" +
                    op->schema.text + ")");
    if (f->schema.args.size() != op->schema.args.size() ||
        f->schema.returns.size() != op->schema.returns.size()) {
      // The functional form takes the same arguments; functionalization maps them one to one.
      bad.push_back(op->short_name + ": schema arity differs from " + f->short_name + " (" +
                    op->schema.text + " vs " + f->schema.text + ")");
      continue;
    }
    for (size_t i = 0; i < f->schema.args.size(); ++i)
      if (f->schema.args[i].name != op->schema.args[i].name) {
        bad.push_back(op->short_name + ": argument " + std::to_string(i) + " is '" +
                      op->schema.args[i].name + "' but " + f->short_name + " calls it '" +
                      f->schema.args[i].name + "'");
        break;
      }
  }
  // A functional op's in-place link must name an op that writes: tagged inplace, or one whose
  // mutation the schema does not declare (1.13's native_batch_norm ->
  // _native_batch_norm_legit_functional).
  for (const OpDef* op : aten_ops().all()) {
    if (op->inplace_variant.empty()) continue;
    const OpDef* v = aten_ops().find(op->inplace_variant);
    if (v && !v->has_tag(kInplace) && v->mutated_args().empty() && v->undeclared_mutations.empty())
      bad.push_back(op->short_name + ": in-place variant " + v->short_name +
                    " is not tagged inplace and mutates nothing");
  }
  std::string list;
  for (auto& m : bad) list += "\n    " + m;
  EXPECT_TRUE(bad.empty()) << bad.size() << " in-place link problems:" << list;
}

TEST(Registry, ViewOpsWithScatterInverseAreLinked) {
  std::vector<std::string> bad;
  for (const OpDef* op : aten_ops().all()) {
    if (!op->scatter_inverse.empty()) {
      const OpDef* s = aten_ops().find(op->scatter_inverse);
      if (!op->has_tag(kView))
        bad.push_back(op->short_name + ": has a scatter inverse but is not tagged view");
      if (!s) {
        bad.push_back(op->short_name + ": scatter inverse '" + op->scatter_inverse +
                      "' is not registered");
        continue;
      }
      if (!s->has_tag(kScatter))
        bad.push_back(op->short_name + ": scatter inverse " + s->short_name +
                      " is not tagged scatter");
      if (s->view_of != op->name)
        bad.push_back(op->short_name + ": scatter inverse " + s->short_name + " links back to '" +
                      s->view_of + "'");
      // X_scatter(Tensor self, Tensor src, <the view's arguments after self>).
      const auto& va = op->schema.args;
      const auto& sa = s->schema.args;
      bool same = sa.size() == va.size() + 1 && sa.size() >= 2 && sa[0].name == "self" &&
                  sa[1].name == "src";
      for (size_t i = 1; same && i < va.size(); ++i) same = va[i].name == sa[i + 1].name;
      if (!same)
        bad.push_back(op->short_name + ": scatter inverse arguments do not follow the view's (" +
                      op->schema.text + " vs " + s->schema.text + ")");
    }
    if (op->has_tag(kScatter)) {
      const OpDef* v = op->view_of.empty() ? nullptr : aten_ops().find(op->view_of);
      if (!v)
        bad.push_back(op->short_name +
                      ": tagged scatter but inverts no registered view (link it with .scatter(\"" +
                      op->short_name + "\") on the view op)");
      else if (!v->has_tag(kView))
        bad.push_back(op->short_name + ": inverts " + v->short_name + ", which is not tagged view");
    }
  }
  // The views functionalization replays through a scatter in ATen (slice, select, diagonal,
  // as_strided) must be linked whenever both ops are registered.
  const std::pair<const char*, const char*> kKnown[] = {
      {"aten::slice.Tensor", "aten::slice_scatter"},
      {"aten::select.int", "aten::select_scatter"},
      {"aten::diagonal", "aten::diagonal_scatter"},
      {"aten::as_strided", "aten::as_strided_scatter"},
  };
  for (auto [view, scatter] : kKnown) {
    const OpDef* v = aten_ops().find(view);
    const OpDef* s = aten_ops().find(scatter);
    if (v && s && v->scatter_inverse != s->name)
      bad.push_back(v->short_name + " and " + s->short_name +
                    " are both registered but not linked");
  }
  std::string list;
  for (auto& m : bad) list += "\n    " + m;
  EXPECT_TRUE(bad.empty()) << bad.size() << " view/scatter link problems:" << list;
}

// Every view -- an op whose result aliases an argument it does not write -- declares how a write
// into its result reaches the argument (OpDef::view_inverse), as PyTorch's FunctionalInverses
// does; a metadata mutation (t_, as_strided_) is functionalized as its view, which must have one.
// A CompositeImplicitAutograd view that may copy (reshape, flatten, contiguous) is functionalized
// through its decomposition instead.
TEST(Registry, EveryViewOpHasAnInverse) {
  std::vector<std::string> bad;
  size_t views = 0;
  for (const OpDef* op : aten_ops().all()) {
    if (op->has_tag(kView) && op->has_tag(kInplace)) {
      const OpDef* v = aten_ops().find(op->functional_variant);
      if (!v || !v->view_inverse)
        bad.push_back(op->short_name + ": a metadata mutation whose view " +
                      (v ? v->short_name + " has no inverse" : std::string("is not registered")));
      continue;
    }
    bool view = false;
    std::vector<int> written = op->mutated_args();
    for (size_t r = 0; r < op->schema.returns.size(); ++r) {
      int a = op->return_alias_of(r);
      view = view || (a >= 0 && std::find(written.begin(), written.end(), a) == written.end());
    }
    if (!view) {
      if (op->has_tag(kView)) bad.push_back(op->short_name + ": tagged view but aliases nothing");
      if (op->view_inverse) bad.push_back(op->short_name + ": has an inverse but is no view");
      continue;
    }
    ++views;
    if (op->view_inverse) continue;
    if (op->has_tag(kCompositeImplicit) && op->decomposition && !op->has_tag(kView)) continue;
    bad.push_back(op->short_name + " [" + tag_names(op->tags) + "]: a view without an inverse");
  }
  EXPECT_GT(views, 20u);
  std::string list;
  for (auto& m : bad) list += "\n    " + m;
  EXPECT_TRUE(bad.empty()) << bad.size() << " view inverse problems:" << list;
}

// The op facts passes read instead of testing names (issue 43): what each declared op lacks of
// those its tags call for. A compute-intensive op needs a FLOPs formula (else the cost model
// prices it by elements), a collective its communicated bytes, a recompute class must be
// consistent with the other tags, and a fact's argument positions must exist. kKnownGaps lists
// the ops that lack a fact on purpose, each with the reason; every other gap fails.
TEST(Registry, OpFactsAreDeclaredWhereTheirTagsCallForThem) {
  static const std::map<std::string, std::string> kKnownGaps = {
      // Priced by their elements today; a formula would change the flops cost model's figures.
      {"aten::addmv", "no FLOPs formula"},
      {"aten::mv", "no FLOPs formula"},
      {"aten::dot", "no FLOPs formula"},
      // Issues nothing: the collective it waits for is priced where it is issued.
      {"_c10d_functional::wait_tensor", "no communicated bytes"},
  };
  std::vector<std::string> gaps, known, classless;
  auto lacks = [&](const OpDef& op, const std::string& what) {
    std::string line = op.short_name + " [" + tag_names(op.tags) + "]: " + what;
    auto it = kKnownGaps.find(op.name);
    (it != kKnownGaps.end() && it->second == what ? known : gaps).push_back(line);
  };
  auto arg_exists = [](const OpDef& op, int i) {
    return i >= 0 && static_cast<size_t>(i) < op.schema.args.size();
  };
  for (const OpDef* op : aten_ops().all()) {
    const bool composite = op->has_tag(kCompositeImplicit);
    if (op->has_tag(kComputeIntensive) && !composite && !op->flops) lacks(*op, "no FLOPs formula");
    if (op->has_tag(kCollective) && !op->communication_bytes) lacks(*op, "no communicated bytes");
    if (op->communication_bytes && !op->has_tag(kCollective))
      lacks(*op, "communicated bytes without the collective tag");
    if (op->has_tag(kViewOp) && !op->has_tag(kView)) lacks(*op, "view_op but not a view");
    if (op->has_tag(kRecomputable | kViewOp | kNormalization) &&
        op->has_tag(kInplace | kRandom | kNondeterministicSeeded | kCollective | kEffectful))
      lacks(*op, "a recompute class on an in-place, random, collective or effectful op");
    if (op->fill_value && op->fill_arg >= 0 && !arg_exists(*op, op->fill_arg))
      lacks(*op, "fill value from an argument it does not have");
    if (op->identity && (op->schema.args.size() < 2 || (op->identity->alpha_arg >= 0 &&
                                                        !arg_exists(*op, op->identity->alpha_arg))))
      lacks(*op, "identity element without the arguments it names");
    if (op->identity && op->identity->alpha_arg >= 0 && op->identity->value != 0)
      lacks(*op, "identity scaled by alpha that is not 0");
    // In no partitioner class: the partitioner bans recomputing it (PyTorch's "not in recomputable
    // allowlist"). Legitimate (sort, cumsum, embedding, ...); listed for whoever adds an op.
    if (!composite && !op->has_tag(kInplace) &&
        !op->has_tag(kPointwise | kRecomputable | kViewOp | kRandom | kNondeterministicSeeded |
                     kComputeIntensive | kNormalization | kCollective | kEffectful))
      classless.push_back(op->short_name);
  }
  // A packet the registry declares takes its facts from its declaration, not tag_provided().
  // (finalize() gives a declared packet's own classes to the overloads the provider adds.)
  for (const auto& [packet, tags] : aten_ops().provided_tags()) {
    bool declared = false;
    uint32_t declared_tags = 0;
    for (const OpDef* op : aten_ops().all())
      if (op->schema.name == packet) {
        declared = true;
        declared_tags |= op->tags;
      }
    if (declared && (declared_tags & tags) != tags)
      gaps.push_back(packet + ": declared, yet tagged [" + tag_names(tags & ~declared_tags) +
                     "] by tag_provided() (declare the tags with the op)");
  }
  std::string list;
  for (auto& g : gaps) list += "\n    " + g;
  EXPECT_TRUE(gaps.empty()) << gaps.size()
                            << " declared ops lack op facts their tags call for:" << list;
  EXPECT_EQ(known.size(), kKnownGaps.size()) << "a known gap was filled: drop it from kKnownGaps";
  list.clear();
  for (auto& k : known) list += "\n    " + k;
  for (auto& c : classless)
    list += "\n    " + c + ": in no recompute class (banned from recompute)";
  std::cout << "[ op facts ] " << known.size() << " known gaps, " << classless.size()
            << " ops in no recompute class:" << list << "\n";
}

}  // namespace
}  // namespace aotgrad
