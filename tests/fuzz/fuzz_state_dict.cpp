// libFuzzer harness: parse a .safetensors image, then load it strictly and non-strictly into a
// small module tree (conv + BatchNorm-like block + a nested Sequential-like head). Beyond "no
// crash, only cvattn::Error", it checks that loading is all-or-nothing: a failed load leaves
// every parameter as it was, and a successful one copies the file's values exactly.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/io/safetensors.hpp"
#include "fuzz_common.hpp"

namespace {

using cvattn::Module;
using cvattn::Shape;
using cvattn::StateDict;
using cvattn::Strict;
using cvattn::Tensor;

class ConvLike : public cvattn::UnaryModule {
 public:
  ConvLike(std::int64_t in, std::int64_t out, std::int64_t k, bool bias) {
    weight_ = register_parameter("weight", {out, in, k, k});
    if (bias) bias_ = register_parameter("bias", {out});
  }
  std::string describe() const override { return "ConvLike"; }
  Tensor forward(const Tensor& x) const override {
    return cvattn::functional::conv2d(x, weight_, bias_,
                                      cvattn::functional::Conv2dOptions().padding(1));
  }

 private:
  Tensor weight_, bias_;
};

class BatchNormLike : public cvattn::UnaryModule {
 public:
  explicit BatchNormLike(std::int64_t c) {
    register_parameter("weight", {c});
    register_parameter("bias", {c});
    register_buffer("running_mean", {c});
    register_buffer("running_var", {c});
    register_buffer("num_batches_tracked", {}, /*integer=*/true);
  }
  std::string describe() const override { return "BatchNormLike"; }
  Tensor forward(const Tensor& x) const override { return x; }
};

class SequentialLike : public Module {
 public:
  SequentialLike() {
    register_module("0", std::make_shared<ConvLike>(4, 3, 1, false));
    register_module("1", std::make_shared<BatchNormLike>(3));
  }
  std::string describe() const override { return "SequentialLike"; }
};

class Net : public Module {
 public:
  Net() {
    conv = register_module("conv", std::make_shared<ConvLike>(2, 4, 3, true));
    register_module("bn", std::make_shared<BatchNormLike>(4));
    register_module("head", std::make_shared<SequentialLike>());
    register_parameter("scale", {1, 4, 1, 1});
  }
  std::string describe() const override { return "Net"; }
  std::shared_ptr<ConvLike> conv;
};

std::vector<std::vector<float>> snapshot(const Module& m) {
  std::vector<std::vector<float>> out;
  const StateDict dict = m.state_dict();  // a temporary's entries() would dangle in the loop
  for (const auto& e : dict.entries()) {
    out.emplace_back(e.value.data(), e.value.data() + e.value.numel());
  }
  return out;
}

bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    if (!a[i].empty() && std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) return false;
  }
  return true;
}

void load_and_check(const StateDict& dict, Strict strict) {
  Net net;
  const auto before = snapshot(net);
  try {
    net.load_state_dict(dict, strict);
  } catch (const cvattn::Error&) {
    CVATTN_FUZZ_ASSERT(same_bits(snapshot(net), before));
    return;
  }
  // Every loaded key holds exactly the file's values.
  const StateDict loaded = net.state_dict();
  for (const auto& e : loaded.entries()) {
    const StateDict::Entry* src = dict.find(e.key);
    if (src == nullptr || e.integer) continue;
    CVATTN_FUZZ_ASSERT(src->value.shape() == e.value.shape());
    CVATTN_FUZZ_ASSERT(e.value.numel() == 0 ||
                       std::memcmp(src->value.data(), e.value.data(),
                                   static_cast<std::size_t>(e.value.numel()) * 4) == 0);
  }
  // NaN/Inf weights are data, not errors: forward must still be defined.
  const Tensor x = Tensor::full({1, 2, 5, 5}, 0.5f);
  const Tensor y = net.conv->forward(x);
  CVATTN_FUZZ_ASSERT((y.shape() == Shape{1, 4, 5, 5}));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cvattn::fuzz::init_limits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cvattn::fuzz::guarded([&] {
    const StateDict dict = cvattn::io::parse_safetensors(data, size, "fuzz.safetensors");
    load_and_check(dict, Strict::yes);
    load_and_check(dict, Strict::no);
    // Prefix handling, as modules that load sub-dictionaries use it.
    if (dict.has_prefix("head")) load_and_check(dict.sub("head"), Strict::no);
  });
}
