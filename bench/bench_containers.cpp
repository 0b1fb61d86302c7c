// What the container machinery costs: a Sequential of tiny layers (call_child per child, error
// paths, hooks), forward vs forward_with_maps vs calling each layer's forward directly; and the
// loading path of a ResNet-50-sized state_dict (320 keys): load_state_dict, state_dict(),
// rename_keys. Arg = number of layers / keys.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/containers.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/sequential.hpp"
#include "support/random.hpp"

using cvattn::Tensor;

namespace {

std::shared_ptr<cvattn::Sequential> relu_chain(std::int64_t layers) {
  auto seq = std::make_shared<cvattn::Sequential>();
  for (std::int64_t i = 0; i < layers; ++i) seq->push_back(std::make_shared<cvattn::ReLU>());
  return seq;
}

const Tensor& small_input() {
  static const Tensor x = cvattn::test::random_tensor({1, 16}, 1);
  return x;
}

void BM_SequentialForward(benchmark::State& state) {
  const auto seq = relu_chain(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(seq->forward(small_input()));
}
BENCHMARK(BM_SequentialForward)->Arg(16);

void BM_SequentialForwardWithMaps(benchmark::State& state) {
  const auto seq = relu_chain(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(seq->forward_with_maps(small_input()));
}
BENCHMARK(BM_SequentialForwardWithMaps)->Arg(16);

// The floor: the same layers' forward called directly, no container.
void BM_DirectForward(benchmark::State& state) {
  const auto seq = relu_chain(state.range(0));
  for (auto _ : state) {
    Tensor y = small_input();
    for (std::size_t i = 0; i < seq->size(); ++i) y = seq->at(i)->forward(y);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(BM_DirectForward)->Arg(16);

// A net of `keys / 2` Linear(4, 4) layers in a ModuleList: `keys` parameters.
std::shared_ptr<cvattn::ModuleList> linear_list(std::int64_t keys) {
  auto list = std::make_shared<cvattn::ModuleList>();
  for (std::int64_t i = 0; i < keys / 2; ++i) {
    list->push_back(std::make_shared<cvattn::Linear>(cvattn::LinearOptions(4, 4)));
  }
  return list;
}

void BM_LoadStateDict(benchmark::State& state) {
  const auto net = linear_list(state.range(0));
  const cvattn::StateDict dict = net->state_dict();
  for (auto _ : state) benchmark::DoNotOptimize(net->load_state_dict(dict, cvattn::Strict::no));
}
BENCHMARK(BM_LoadStateDict)->Arg(320);

void BM_StateDict(benchmark::State& state) {
  const auto net = linear_list(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(net->state_dict());
}
BENCHMARK(BM_StateDict)->Arg(320);

void BM_RenameKeys(benchmark::State& state) {
  const cvattn::StateDict dict = linear_list(state.range(0))->state_dict();
  const auto rules = cvattn::KeyRenames().prefix("1", "one").regex(R"(\.(weight|bias)$)", "._$1");
  for (auto _ : state) benchmark::DoNotOptimize(cvattn::rename_keys(dict, rules));
}
BENCHMARK(BM_RenameKeys)->Arg(320);

}  // namespace
