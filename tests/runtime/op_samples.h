// aotgrad: reader for the op-sample files (tests/data/op_samples/*.txt) shared by the registry
// sweeps.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/ir/tensor_meta.h"

// No libtorch here: the ops tests (no libtorch) read the samples too.
namespace aotgrad::op_samples {

/// A tensor argument of a sample: `f32[4, 5]`, `f32[4, 5][1, 4]`, `i64[2, 4]{0:10}`.
struct TensorSpec {
  TensorMeta meta;
  std::optional<std::pair<double, double>> range;  // {lo:hi}
};

/// One sample line: `op(args)` with its tensors replaced by placeholder names t0, t1, ...
struct Sample {
  int line = 0;
  std::string text;  // the line as written (without the `!`)
  bool must_fail = false;
  /// `!!`: must fail, and libtorch is not run on it -- its kernel crashes the process.
  bool libtorch_crashes = false;
  std::string op_name;  // as written: "add.Tensor", "relu"
  std::string args;     // the arguments with tensors replaced by placeholder names t0, t1, ...
  std::vector<TensorSpec> tensors;
};

/// A `@skip <op>: <reason>` line.
struct Skip {
  int line = 0;
  std::string op_name;
  std::string reason;
};

/// A parsed sample file; malformed lines are collected in `errors`, not thrown.
struct SampleFile {
  std::filesystem::path path;
  std::vector<Sample> samples;
  std::vector<Skip> skips;
  std::vector<std::pair<int, std::string>> errors;  // malformed lines
};

/// tests/data/op_samples (from the AOTGRAD_TEST_DATA compile definition).
std::filesystem::path samples_dir();
/// The *.txt files of samples_dir(), sorted.
std::vector<std::filesystem::path> sample_files();
SampleFile read_sample_file(const std::filesystem::path& path);

/// Splits `op(args)` and replaces every tensor token in args by a placeholder name. Throws Error
/// on a malformed line.
Sample parse_sample(const std::string& text);

/// The one-node graph of a sample: placeholders t0.. annotated from the specs, then
/// `result = torch.ops.aten.<op_short_name>(args)`. `result_annotation` empty: the parser infers
/// the result's metadata; otherwise it is written on `result` (and nothing is inferred).
/// With `returns` > 1 the graph also projects result[0].. with getitems r0.. and returns those;
/// else it returns (result,).
std::string graph_text(const Sample& s, const std::string& op_short_name,
                       const std::string& result_annotation = "", size_t returns = 1);

/// FNV-1a hash, for seeds derived from file names.
uint64_t fnv1a(const std::string& s);
/// `op_samples` file stem to a test name: "pointwise" -> "Pointwise", "nn_ops" -> "NnOps".
std::string camel(const std::string& stem);

}  // namespace aotgrad::op_samples
