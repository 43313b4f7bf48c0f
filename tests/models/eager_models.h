// aotgrad tests: the example models of tools/export.py (MLP, GPTBlock, CNNBN) written with
// libtorch's C++ frontend, so exported graphs can be checked against eager libtorch running the
// same model.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace aotgrad::models {

/// Tensors by placeholder name (`p_fc1_weight`, `p_bn1_running_mean`, `x`, ...).
using TensorMap = std::map<std::string, at::Tensor>;

/// One of tools/export.py's example models, built with torch::nn modules registered in the Python
/// class's order and running the Python forward (with its loss) op for op. State is addressed by
/// placeholder name: `p_` + the dotted name with `_` for `.` (`fc1.weight` <-> `p_fc1_weight`).
class EagerModel {
 public:
  virtual ~EagerModel();

  /// "mlp", "gpt_block", "cnn_bn", "resnet18", "mobilenet_v2", "efficientnet_b0", ...
  virtual std::string name() const = 0;
  /// Placeholder names in the exported graph's order: parameters, then buffers, then inputs.
  std::vector<std::string> parameter_names() const;
  std::vector<std::string> buffer_names() const;
  virtual std::vector<std::string> input_names() const = 0;
  std::vector<std::string> placeholder_names() const;

  /// The live parameter / buffer tensors (not copies: an SGD step on them updates the model, and a
  /// parameter's `.grad()` is its gradient).
  TensorMap parameters() const;
  TensorMap buffers() const;
  /// Copies every parameter and buffer from `values` (extra entries, such as inputs, are ignored).
  /// Throws std::invalid_argument naming a missing entry or one of another shape or dtype.
  void load_state(const TensorMap& values);

  /// The forward with the loss on `inputs` (in input_names() order), as Python's forward does it;
  /// in training mode BatchNorm updates its running statistics.
  virtual at::Tensor loss(const std::vector<at::Tensor>& inputs) = 0;
  /// Resets every parameter's gradient to undefined (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  /// Training mode (the default, as the exporter traced it) or evaluation mode.
  void train(bool on = true);
  /// Moves the parameters and buffers to `device` (torch::nn::Module::to).
  virtual void to(c10::Device device) = 0;

 protected:
  struct Named {
    std::string placeholder;  // p_fc1_weight
    at::Tensor tensor;
  };
  virtual std::vector<Named> named_parameters() const = 0;
  virtual std::vector<Named> named_buffers() const = 0;
  virtual void set_training(bool on) = 0;
};

/// The model `name` ("mlp", "gpt_block", "cnn_bn", "resnet18", "mobilenet_v2", ...) with libtorch's
/// default initialization; load the exported values with load_state(). Throws std::invalid_argument
/// for other names.
std::unique_ptr<EagerModel> make_eager_model(const std::string& name);
/// The names make_eager_model() accepts.
std::vector<std::string> eager_model_names();
/// The torchvision models of the training-step benchmark (resnet18, mobilenet_v2,
/// efficientnet_b0): checked in as graphs without values, valued by model_data_from_eager().
bool is_vision_model(const std::string& name);

/// An exported model's files: `<dir>/<name>.fx` and `<dir>/<name>.inputs.safetensors`.
struct ModelData {
  std::string graph_text;
  std::vector<std::string> names;  // the safetensors' tensor names, in file order
  TensorMap values;                // every placeholder's value (contiguous CPU tensors)
  std::string outputs_json;        // `__metadata__["outputs"]`: the graph's outputs, as JSON
};
/// Reads the files of `name` under `dir`; errors (aotgrad::Error) name the file.
ModelData load_model_data(const std::string& dir, const std::string& name);

/// An exported graph checked in without its values (`<dir>/<name>.fx` alone: the torchvision
/// models, whose weights are too large to keep): `model`'s own parameters and buffers (its
/// libtorch initialization, cloned) and inputs of the graph's sizes drawn from a generator seeded
/// with `seed` (floats ~ N(0, 1), integers -- class targets -- in [0, 10)).
ModelData model_data_from_eager(const std::string& dir, const EagerModel& model, uint64_t seed);

/// `values[name]` cloned for each name (so a run that mutates them leaves `values` alone).
std::vector<at::Tensor> cloned(const TensorMap& values, const std::vector<std::string>& names);

}  // namespace aotgrad::models
