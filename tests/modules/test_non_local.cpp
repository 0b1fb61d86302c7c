// NonLocalAttn against timm's block (docs/modules.md §6), fixtures from
// tests/fixtures/non_local.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/non_local.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

NonLocalAttnOptions options_of(const test::Fixture& fx) {
  const auto& o = fx.params()["options"];
  NonLocalAttnOptions opts(fx.params()["in_channels"].get<std::int64_t>());
  if (o.contains("use_scale")) opts.use_scale(o["use_scale"].get<bool>());
  if (o.contains("rd_ratio")) opts.rd_ratio(o["rd_ratio"].get<double>());
  if (o.contains("rd_channels")) opts.rd_channels(o["rd_channels"].get<std::int64_t>());
  if (o.contains("rd_divisor")) opts.rd_divisor(o["rd_divisor"].get<std::int64_t>());
  return opts;
}

TEST(NonLocalAttn, MatchesTimm) {
  const auto cases = test::fixtures_in("non_local");
  ASSERT_GE(cases.size(), 8u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    // Built from the constructor options, so the width rule (make_divisible) is checked too.
    const NonLocalAttnOptions o = options_of(fx);
    EXPECT_EQ(o.reduced_channels(), fx.params()["rd_channels"].get<std::int64_t>());
    NonLocalAttn m(o);
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = m.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(m.forward(x), fx.tensor("output"), test::Tolerance{});
  }
}

TEST(NonLocalAttn, OptionsFromStateDict) {
  const auto fx = test::fixture("non_local/nonlocal_c72_bump");
  const auto o = NonLocalAttnOptions::from_state_dict(fx.weights());
  EXPECT_EQ(o.in_channels(), 72);
  EXPECT_EQ(o.reduced_channels(), 16);
  EXPECT_TRUE(o.use_scale());
  EXPECT_EQ(NonLocalAttnOptions(72).reduced_channels(), 16);
  EXPECT_EQ(NonLocalAttnOptions(256).reduced_channels(), 32);
  EXPECT_EQ(NonLocalAttn(NonLocalAttnOptions(64)).describe(),
            "NonLocalAttn(in_channels=64, rd_channels=8, use_scale=True)");
}

TEST(NonLocalAttn, FreshBlockIsTheIdentityAndRowsSumToOne) {
  // timm zero-initialises norm.weight and norm.bias: y = x whatever the other weights.
  NonLocalAttn m(NonLocalAttnOptions(16));
  StateDict w;
  std::uint64_t seed = 3;
  const StateDict current = m.state_dict();
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = test::random_tensor(e.value.shape(), seed++);
    if (e.key == "norm.weight" || e.key == "norm.bias") t.fill(0.0f);
    if (e.key == "norm.running_var") t.fill(1.0f);
    w.set(e.key, t);
  }
  m.load_state_dict(w);
  const Tensor x = test::random_tensor({2, 16, 5, 3}, 9);
  const Attended r = m.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.output, x, (test::Tolerance{0, 0}));
  const Tensor& a = r.maps.at(maps::kAttention);
  ASSERT_EQ(a.shape(), (Shape{2, 15, 15}));
  for (std::int64_t row = 0; row < 2 * 15; ++row) {
    float s = 0;
    for (std::int64_t j = 0; j < 15; ++j) s += a[row * 15 + j];
    EXPECT_NEAR(s, 1.0f, 1e-5);
  }
}

TEST(NonLocalAttn, RejectsBadInputAndOptions) {
  const NonLocalAttn m(NonLocalAttnOptions(16));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 4, 4}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("NonLocalAttn::forward: tensor 'x' expected shape [*, 16, *, *], got "
                            "[1, 8, 4, 4]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 16, 0, 4}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected H, W >= 1")));
  EXPECT_THAT(test::Call([] { (void)NonLocalAttnOptions(0).reduced_channels(); }),
              ThrowsMessage<ValueError>(HasSubstr("in_channels must be >= 1")));
  EXPECT_THAT(test::Call([] { (void)NonLocalAttnOptions(8).rd_ratio(-1).reduced_channels(); }),
              ThrowsMessage<ValueError>(HasSubstr("rd_ratio must be positive")));
  const auto fx = test::fixture("non_local/nonlocal_c16_default");
  StateDict w = fx.weights();
  w.erase("norm.running_var");
  NonLocalAttn fresh(NonLocalAttnOptions(16));
  EXPECT_THAT(test::Call([&] { fresh.load_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'norm.running_var'")));
  EXPECT_THAT(test::Call([] { (void)NonLocalAttnOptions::from_state_dict(StateDict()); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 't.weight'")));
}

TEST(NonLocalAttn, ForwardIsThreadSafe) {
  const auto fx = test::fixture("non_local/nonlocal_c16_default");
  NonLocalAttn m(options_of(fx));
  m.load_state_dict(fx.weights());
  const Tensor x = fx.tensor("input");
  test::expect_thread_safe([&] {
    const Attended r = m.forward_with_maps(x);
    return std::vector<Tensor>{r.output, r.maps.at(maps::kAttention)};
  });
}

}  // namespace
}  // namespace cvattn
