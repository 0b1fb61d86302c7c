#include "cvattn/modules/sequential.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules) {
  for (const auto& m : modules) append(std::to_string(layers_.size()), m);
}

Sequential::Sequential(std::initializer_list<Named> modules) {
  for (const auto& [name, m] : modules) append(name, m);
}

void Sequential::append(const std::string& name, std::shared_ptr<UnaryModule> module) {
  const std::string index = std::to_string(layers_.size());
  CVATTN_CHECK(module != nullptr, ValueError, "Sequential: module ", index, " is null",
               name == index ? "" : " (named '" + name + "')");
  register_module(name, module);
  layers_.emplace_back(name, std::move(module));
}

const std::shared_ptr<UnaryModule>& Sequential::at(std::size_t i) const {
  CVATTN_CHECK(i < layers_.size(), ValueError, "Sequential::at: index ", i, " out of range for ",
               layers_.size(), " modules");
  return layers_[i].second;
}

const std::shared_ptr<UnaryModule>& Sequential::at(const std::string& name) const {
  std::string names;
  for (const auto& layer : layers_) {
    if (layer.first == name) return layer.second;
    names += (names.empty() ? "" : ", ") + layer.first;
  }
  throw ValueError(detail::concat("Sequential::at: no module named '", name,
                                  "' (names: ", names.empty() ? "none" : names, ")"));
}

const std::string& Sequential::name(std::size_t i) const {
  CVATTN_CHECK(i < layers_.size(), ValueError, "Sequential::name: index ", i, " out of range for ",
               layers_.size(), " modules");
  return layers_[i].first;
}

Tensor Sequential::run(const Tensor& x, AttentionMaps* maps) const {
  Tensor y = x;
  for (const auto& [name, layer] : layers_) y = call_child(name, *layer, y, maps);
  return y;
}

Tensor Sequential::forward(const Tensor& x) const { return run(x, nullptr); }

Attended Sequential::forward_with_maps(const Tensor& x) const {
  Attended r;
  r.output = run(x, &r.maps);
  return r;
}

}  // namespace cvattn
