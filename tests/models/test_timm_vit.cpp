// timm's ViT / DeiT networks (issue 20) against timm's own forward (tests/fixtures/models.py):
// logits, features, attention maps by module path and attention rollout (docs/modules.md §18), with
// weights regenerated bit for bit from the case's seed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/functional/tokens.hpp"
#include "cvattn/models/vision_transformer.hpp"
#include "support/call.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn::test {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
namespace F = cvattn::functional;

std::vector<std::string> vit_cases() {
  std::vector<std::string> names;
  for (const Fixture& fx : fixtures_in("models")) {
    if (fx.has("rollout")) names.push_back(fx.name());
  }
  return names;
}

// rows [N, H, len(rows), T] of a full map [N, H, T, T].
Tensor rows_of(const Tensor& map, const std::vector<std::int64_t>& rows) {
  const std::int64_t n = map.dim(0), h = map.dim(1), t = map.dim(2);
  const auto r = static_cast<std::int64_t>(rows.size());
  Tensor out = Tensor::empty({n, h, r, t});
  for (std::int64_t i = 0; i < n * h; ++i) {
    for (std::int64_t k = 0; k < r; ++k) {
      std::copy_n(map.data() + (i * t + rows[static_cast<std::size_t>(k)]) * t, t,
                  out.data() + (i * r + k) * t);
    }
  }
  return out;
}

class TimmVit : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmVit, MatchesTimm) {
  const Fixture fx = fixture("models/" + GetParam());
  const auto net = network_for(fx);
  const models::NetworkOutput out = net->run(input_for(fx));
  const Tensor logits = fx.tensor("output");
  EXPECT_TENSOR_NEAR(out.logits, logits, network_tolerance(logits));
  const Tensor features = fx.tensor("features");
  EXPECT_TENSOR_NEAR(out.features, features, network_tolerance(features));
  EXPECT_FALSE(out.feature_map.defined());
  EXPECT_FALSE(net->has_class_activation_map());
  ASSERT_TRUE(net->has_rollout());

  std::vector<std::string> paths;
  for (const auto& item : out.maps.items()) paths.push_back(item.first);
  EXPECT_EQ(paths, fx.params()["map_paths"].get<std::vector<std::string>>());
  const auto rows = fx.params()["attention_rows"].get<std::vector<std::int64_t>>();
  for (const auto& p : fx.params()["saved_maps"]) {
    const std::string path = p.get<std::string>();
    const Tensor ref = fx.tensor(path + "_rows");
    EXPECT_TENSOR_NEAR(rows_of(out.maps.at(path), rows), ref, network_tolerance(ref)) << path;
  }
  for (const auto& r : fx.params()["rollouts"]) {
    const std::string fusion = r[0].get<std::string>();
    const double ratio = r[1].get<double>();
    char name[64];
    std::snprintf(name, sizeof name, "rollout_%s_%g", fusion.c_str(), ratio);
    const std::string file = fusion == "mean" && ratio == 0.0 ? "rollout" : name;
    const Tensor ref = fx.tensor(file);
    EXPECT_TENSOR_NEAR(net->rollout(out, F::parse_head_fusion(fusion), ratio), ref,
                       network_tolerance(ref))
        << file;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimmVit, ::testing::ValuesIn(vit_cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(VisionTransformer, RefusesOtherImageSizesAsTimmDoes) {
  const auto net = models::build("deit_tiny_patch16_224", 4);
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({1, 3, 160, 160}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("expected [N >= 1, 3, 224, 224] (timm's default strict img_size), got "
                            "[1, 3, 160, 160]")));
  EXPECT_THAT(test::Call([&] { (void)net->class_activation_map(models::NetworkOutput{}); }),
              ThrowsMessage<ValueError>(HasSubstr("no class activation map")));
}

TEST(VisionTransformer, NumClassesFromTheHead) {
  const auto skeleton = models::build("deit_tiny_distilled_patch16_224", 5);
  const StateDict dict = generated_state_dict(*skeleton, 9).dict;
  const auto net = models::create("deit_tiny_distilled_patch16_224", dict);
  EXPECT_EQ(net->num_classes(), 5);
  EXPECT_THAT(test::Call([&] { (void)models::create("deit_tiny_patch16_224", dict); }),
              ThrowsMessage<ValueError>(AllOf(HasSubstr("unexpected 'dist_token'"),
                                              HasSubstr("'pos_embed' expected [1, 197, 192], "
                                                        "got [1, 198, 192]"))));
}

TEST(VisionTransformer, ForwardIsThreadSafeAndMapsDoNotChangeIt) {
  const auto net = models::build("deit_tiny_distilled_patch16_224", 3);
  net->load_state_dict(generated_state_dict(*net, 11).dict);
  const Tensor x = generated("input", {1, 3, 224, 224}, 12);
  const models::NetworkOutput serial = net->run(x, true);
  const Tensor plain = net->run(x, false).logits;  // the fused SDPA path: same up to rounding
  EXPECT_TENSOR_NEAR(plain, serial.logits, (Tolerance{1e-5, 1e-5}));
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = net->run(x, true).logits; });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& r : results) EXPECT_TENSOR_NEAR(r, serial.logits, kExact);
}

TEST(AttentionRollout, HandCheckable) {
  // One block, one head, T = 2 (one prefix token, a 1x1 grid): A = [[0.5, 0.5], [0, 1]].
  // Â = 0.5 A + 0.5 I = [[0.75, 0.25], [0, 1]] (rows already sum to 1); R[0, 1:] = 0.25 -> 1.
  const Tensor a = Tensor::from_vector({1, 1, 2, 2}, {0.5f, 0.5f, 0.0f, 1.0f});
  const Tensor one = Tensor::from_vector({1, 1, 1}, {1.0f});
  EXPECT_TENSOR_NEAR(F::attention_rollout({a}, F::AttentionRolloutOptions(Pair2(1))), one, kExact);
  // Two patches: A rows (0.5, 0.25, 0.25): R[0, 1:] = (0.125, 0.125) -> (1, 1).
  const Tensor b = Tensor::from_vector({1, 1, 3, 3}, {0.5f, 0.25f, 0.25f, 0, 1, 0, 0, 0, 1});
  const Tensor ones = Tensor::from_vector({1, 1, 2}, {1.0f, 1.0f});
  EXPECT_TENSOR_NEAR(F::attention_rollout({b}, F::AttentionRolloutOptions(Pair2(1, 2))), ones,
                     kExact);
  // discard_ratio 0.5: floor(4.5) = 4 smallest of (0.5, .25, .25, 0, 1, 0, 0, 0, 1): the zeros
  // at flat 3, 5, 6, 7 (ties by index) -> nothing changes; with 0.6, floor(5.4) = 5 adds flat 1
  // (0.25 before flat 2): A row 0 = (0.5, 0, 0.25) -> Â row 0 = (0.75, 0, 0.125) / 0.875.
  EXPECT_TENSOR_NEAR(
      F::attention_rollout({b}, F::AttentionRolloutOptions(Pair2(1, 2)).discard_ratio(0.5)), ones,
      kExact);
  const Tensor dropped = Tensor::from_vector({1, 1, 2}, {0.0f, 1.0f});
  EXPECT_TENSOR_NEAR(
      F::attention_rollout({b}, F::AttentionRolloutOptions(Pair2(1, 2)).discard_ratio(0.6)),
      dropped, kExact);
  EXPECT_THAT(
      test::Call([&] { (void)F::attention_rollout({b}, F::AttentionRolloutOptions(Pair2(2, 2))); }),
      ThrowsMessage<ShapeError>(HasSubstr("3 tokens do not split into 1 prefix tokens")));
  EXPECT_THAT(test::Call([&] {
                (void)F::attention_rollout(
                    {b}, F::AttentionRolloutOptions(Pair2(1, 2)).discard_ratio(1));
              }),
              ThrowsMessage<ValueError>(HasSubstr("discard_ratio must be in [0, 1)")));
  EXPECT_THAT(test::Call([&] { (void)F::parse_head_fusion("median"); }),
              ThrowsMessage<ValueError>(HasSubstr("expected mean, max or min")));
}

// Every head fusion and discard ratio on fixed maps (models.py rollout_case): the discrete
// choice of discarded entries is exact here because the inputs are the reference's own floats.
TEST(AttentionRollout, MatchesTheReferenceOnFixedMaps) {
  const auto cases = fixtures_in("models", "rollout_");
  ASSERT_EQ(cases.size(), 2u);
  for (const Fixture& fx : cases) {
    SCOPED_TRACE(fx.name());
    std::vector<Tensor> maps;
    for (int i = 0; i < fx.params()["blocks"].get<int>(); ++i) {
      maps.push_back(fx.tensor("attention_" + std::to_string(i)));
    }
    const auto options = F::AttentionRolloutOptions(pair(fx.params()["grid"]))
                             .prefix_tokens(fx.params()["prefix_tokens"].get<std::int64_t>());
    for (const auto& r : fx.params()["rollouts"]) {
      const std::string fusion = r[0].get<std::string>();
      const double ratio = r[1].get<double>();
      char name[64];
      std::snprintf(name, sizeof name, "rollout_%s_%g", fusion.c_str(), ratio);
      auto o = options;
      o.head_fusion(F::parse_head_fusion(fusion)).discard_ratio(ratio);
      EXPECT_TENSOR_NEAR(F::attention_rollout(maps, o), fx.tensor(name), Tolerance{}) << name;
    }
  }
}

TEST(Tokens, PrependSelectAndMean) {
  const Tensor cls = Tensor::from_vector({1, 1, 2}, {9, 8});
  const Tensor tokens = Tensor::from_vector({2, 1, 2}, {1, 2, 3, 4});
  const Tensor joined = F::prepend_tokens({cls}, tokens);
  const Tensor expected = Tensor::from_vector({2, 2, 2}, {9, 8, 1, 2, 9, 8, 3, 4});
  EXPECT_TENSOR_NEAR(joined, expected, kExact);
  const Tensor second = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  EXPECT_TENSOR_NEAR(F::select_token(joined, 1), second, kExact);
  const Tensor mean = Tensor::from_vector({2, 2}, {5, 5, 6, 6});
  EXPECT_TENSOR_NEAR(F::mean_of_two(F::select_token(joined, 0), second), mean, kExact);
  EXPECT_THAT(test::Call([&] { (void)F::select_token(joined, 2); }),
              ThrowsMessage<ShapeError>(HasSubstr("index 2 out of range for 2 tokens")));
}

}  // namespace
}  // namespace cvattn::test
