#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "cvattn/core/error.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::string file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

StateDict parse(const std::string& bytes) {
  return io::parse_safetensors(bytes.data(), bytes.size(), "w");
}

TEST(Safetensors, ReadsTorchWrittenFileWithEveryDtype) {
  const auto fx = test::fixture("io/safetensors");
  const StateDict d = io::load_safetensors(fx.path("weights.safetensors"));
  EXPECT_EQ(d.size(), 6u);
  const test::Tolerance exact{0, 0};
  EXPECT_TENSOR_NEAR(d.at("conv.weight"), fx.tensor("conv.weight"), exact);
  EXPECT_TENSOR_NEAR(d.at("half"), fx.tensor("half"), exact);
  EXPECT_TENSOR_NEAR(d.at("bf16"), fx.tensor("bf16"), exact);
  EXPECT_TENSOR_NEAR(d.at("double"), fx.tensor("conv.weight"), exact);
  EXPECT_TENSOR_NEAR(d.at("bias"), fx.tensor("bias"), exact);
  const auto* nbt = d.find("bn.num_batches_tracked");
  ASSERT_NE(nbt, nullptr);
  EXPECT_TRUE(nbt->integer);
  EXPECT_EQ(nbt->value.rank(), 0);
  EXPECT_EQ(nbt->value[0], 17.0f);
  EXPECT_FALSE(d.find("half")->integer);
}

TEST(Safetensors, HalfPrecisionSpecialValues) {
  // 0x3c00 = 1, 0xc000 = -2, 0x0001 = smallest subnormal, 0x7c00 = inf, 0x7e00 = NaN.
  const std::uint16_t h[5] = {0x3c00, 0xc000, 0x0001, 0x7c00, 0x7e00};
  std::string data(reinterpret_cast<const char*>(h), 10);
  const StateDict d =
      parse(file(R"({"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]}})", data));
  const Tensor& t = d.at("h");
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_EQ(t[1], -2.0f);
  EXPECT_EQ(t[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(t[3]));
  EXPECT_TRUE(std::isnan(t[4]));
}

TEST(Safetensors, SaveThenLoadRoundTrips) {
  StateDict d;
  d.set("a.weight", test::random_tensor({3, 4, 1, 1}, 1));
  d.set("a.bias", test::random_tensor({3}, 2));
  d.set("bn.num_batches_tracked", Tensor::full({}, 9.0f), true);
  const auto path = (std::filesystem::temp_directory_path() / "cvattn_rt.safetensors").string();
  io::save_safetensors(path, d, {{"format", "pt"}});
  const StateDict r = io::load_safetensors(path);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TENSOR_NEAR(r.at("a.weight"), d.at("a.weight"), (test::Tolerance{0, 0}));
  EXPECT_TENSOR_NEAR(r.at("a.bias"), d.at("a.bias"), (test::Tolerance{0, 0}));
  EXPECT_TRUE(r.find("bn.num_batches_tracked")->integer);
  std::filesystem::remove(path);
}

struct Malformed {
  const char* what;
  std::string bytes;
  const char* message;
};

TEST(Safetensors, MalformedFilesGiveClearErrors) {
  const std::string f8(8, '\0');
  const auto entry = [](const std::string& body) { return "{\"t\":" + body + "}"; };
  const std::vector<Malformed> cases = {
      {"empty", "", "too short"},
      {"short length", std::string(5, '\0'), "too short"},
      {"length past end", std::string("\x40\0\0\0\0\0\0\0{}", 10), "runs past the end"},
      {"absurd length", std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8), "exceeds the limit"},
      {"bad json", file("{\"t\": [", ""), "not valid JSON"},
      {"invalid utf8", file("{\"\xff\":1}", ""), "not valid JSON"},
      {"not an object", file("[1,2]", ""), "must be a JSON object"},
      {"entry not object", file(entry("3"), ""), "must be an object"},
      {"no dtype", file(entry(R"({"shape":[2],"data_offsets":[0,8]})"), f8),
       "needs a string 'dtype'"},
      {"bad dtype", file(entry(R"({"dtype":"C64","shape":[1],"data_offsets":[0,8]})"), f8),
       "unsupported dtype 'C64'"},
      {"no shape", file(entry(R"({"dtype":"F32","data_offsets":[0,8]})"), f8),
       "needs an array 'shape'"},
      {"negative dim", file(entry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f8),
       "non-negative integers"},
      {"float dim", file(entry(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), f8),
       "non-negative integers"},
      {"one offset", file(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), f8),
       "needs 'data_offsets'"},
      {"reversed offsets", file(entry(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), f8),
       "reversed"},
      {"offsets past data", file(entry(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), f8),
       "exceed the 8-byte data section"},
      {"size mismatch", file(entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), f8),
       "(12 bytes) but its data offsets [0, 8) span 8 bytes"},
      {"overflowing shape",
       file(entry(R"({"dtype":"F32","shape":[4294967296,4294967296,8],"data_offsets":[0,8]})"), f8),
       "more elements than fit in 64 bits"},
      {"absurd shape",
       file(entry(R"({"dtype":"F32","shape":[100000,100000,100000],"data_offsets":[0,8]})"), f8),
       "allocation cap"},
      {"huge dim",
       file(entry(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]})"), f8),
       "absurd dimension"},
      {"overlap",
       file(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           f8),
       "overlap"},
      {"duplicate key",
       file(
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           f8),
       "'a' appears twice"},
      {"unknown field",
       file(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1})"), f8),
       "unknown field 'x'"},
      {"bad metadata", file(R"({"__metadata__":{"a":1}})", ""), "metadata 'a' must be a string"},
      {"rank 7", file(entry(R"({"dtype":"F32","shape":[1,1,1,1,1,1,2],"data_offsets":[0,8]})"), f8),
       "rank 7"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(test::Call([&] { (void)parse(c.bytes); }),
                ThrowsMessage<IoError>(HasSubstr(c.message)))
        << c.what;
  }
}

TEST(Safetensors, AcceptsEmptyHeaderAndMetadata) {
  EXPECT_TRUE(parse(file("{}", "")).empty());
  EXPECT_TRUE(parse(file(R"({"__metadata__":{"format":"pt"}}  )", "")).empty());
}

TEST(Safetensors, MissingFileNamesThePath) {
  EXPECT_THAT(test::Call([] { (void)io::load_safetensors("/nonexistent/w.safetensors"); }),
              ThrowsMessage<IoError>(HasSubstr("/nonexistent/w.safetensors")));
}

}  // namespace
}  // namespace cvattn
