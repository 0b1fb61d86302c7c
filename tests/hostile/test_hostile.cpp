// Hostile inputs: one table row per case. Each row names the case, the expected outcome and an
// action, either on the C++ API or on the cvattn tool:
//   raises<ErrorType>("substring")  the action throws ErrorType whose message has the substring
//                                   (a tool row: exit status 2 with one "cvattn: error: ..."
//                                   line on stderr holding the substring, nothing on stdout);
//   defined()                       the action returns normally and checks its own result with
//                                   EXPECT_* (a tool row: exit status 0, nothing on stderr).
// Adding a case is adding one row to rows() below:
//   {"conv2d: stride 0", raises<ValueError>("stride must be positive"), api([] { ... })},
//   {"cli: --threads 0", raises<Error>("--threads expects"), tool([] { return Call{{...}}; })},
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <opencv2/core.hpp>
#include <set>
#include <string>
#include <typeinfo>
#include <variant>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"

namespace cvattn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------------
// The table's vocabulary.

struct Expect {
  bool error = false;
  std::string type_name;                               // for messages
  std::function<bool(const std::exception&)> is_type;  // dynamic type check
  std::string substring;
};

template <class E>
Expect raises(std::string substring) {
  return {true, typeid(E).name(),
          [](const std::exception& e) { return dynamic_cast<const E*>(&e) != nullptr; },
          std::move(substring)};
}
Expect defined() { return {}; }

// A tool invocation: arguments after `cvattn`, plus environment assignments (NAME=VALUE).
struct Call {
  std::vector<std::string> args;
  std::vector<std::string> env = {};
};
struct Api {
  std::function<void()> run;
};
struct Tool {
  std::function<Call()> make;  // called at test time, so it may write scratch files
};
Api api(std::function<void()> f) { return {std::move(f)}; }
Tool tool(std::function<Call()> f) { return {std::move(f)}; }

struct Row {
  std::string what;
  Expect expect;
  std::variant<Api, Tool> action;
};
// What GoogleTest prints for a row (instead of its bytes).
void PrintTo(const Row& row, std::ostream* os) { *os << '"' << row.what << '"'; }

// ---------------------------------------------------------------------------------------------
// Helpers for building hostile bytes.

// A .npy image with the given header dict text (padded as numpy does) and raw payload.
std::string npy(const std::string& dict, const std::string& payload = "", int version = 1) {
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) {
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  }
  return out + header + payload;
}
std::string f4_dict(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}
std::string floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
std::string zeros(std::size_t n) { return std::string(n * 4, '\0'); }

// A .safetensors image from header JSON text and data section.
std::string st(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}
std::string st_len(std::uint64_t claimed_len, const std::string& rest) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((claimed_len >> (8 * i)) & 0xff);
  return out + rest;
}

Tensor parse_npy(const std::string& bytes) {
  return io::parse_npy(bytes.data(), bytes.size(), "h.npy");
}
StateDict parse_st(const std::string& bytes) {
  return io::parse_safetensors(bytes.data(), bytes.size(), "h.safetensors");
}

// Runs f with the allocation cap lowered, restoring it afterwards.
template <class F>
void with_cap(std::int64_t bytes, F&& f) {
  const std::int64_t saved = max_tensor_bytes();
  set_max_tensor_bytes(bytes);
  struct Restore {
    std::int64_t v;
    ~Restore() { set_max_tensor_bytes(v); }
  } restore{saved};
  f();
}

// A per-process scratch folder for the tool rows' files, removed at exit.
fs::path scratch_dir() {
  struct Dir {
    fs::path path = fs::temp_directory_path() / ("cvattn_hostile_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}
std::string scratch(const std::string& name, const std::string& bytes) {
  const fs::path p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}
std::string fixture_file(const std::string& relative) {
  return (test::fixtures_root() / relative).string();
}
// A valid conv2d invocation on the CLI fixtures, with `extra` arguments appended.
Call conv_call(std::vector<std::string> extra, std::vector<std::string> env = {},
               const std::string& groups = "2") {
  std::vector<std::string> args = {"run",   "conv2d",
                                   "--in",  "input=" + fixture_file("cli/conv2d_0/input.npy"),
                                   "--in",  "weight=" + fixture_file("cli/conv2d_0/weight.npy"),
                                   "--set", "groups=" + groups};
  args.insert(args.end(), extra.begin(), extra.end());
  return {args, std::move(env)};
}

// A module tree like the PyTorch ones: conv (weight, bias), bn (affine + running statistics +
// integer num_batches_tracked) and a nested head.0.
class ConvLike : public UnaryModule {
 public:
  ConvLike(std::int64_t in, std::int64_t out, std::int64_t k) {
    weight = register_parameter("weight", {out, in, k, k});
    bias = register_parameter("bias", {out});
  }
  std::string describe() const override { return "ConvLike"; }
  Tensor forward(const Tensor& x) const override {
    return functional::conv2d(x, weight, bias, functional::Conv2dOptions().padding(1));
  }
  Tensor weight, bias;
};
class BatchNormLike : public Module {
 public:
  explicit BatchNormLike(std::int64_t c) {
    register_parameter("weight", {c});
    register_parameter("bias", {c});
    register_buffer("running_mean", {c});
    register_buffer("running_var", {c});
    register_buffer("num_batches_tracked", {}, true);
  }
  std::string describe() const override { return "BatchNormLike"; }
};
class Head : public Module {
 public:
  Head() { register_module("0", std::make_shared<ConvLike>(4, 2, 1)); }
  std::string describe() const override { return "Head"; }
};
class Net : public Module {
 public:
  Net() {
    conv = register_module("conv", std::make_shared<ConvLike>(2, 4, 3));
    register_module("bn", std::make_shared<BatchNormLike>(4));
    register_module("head", std::make_shared<Head>());
  }
  std::string describe() const override { return "Net"; }
  std::shared_ptr<ConvLike> conv;
};

// A complete, valid state_dict for Net (values 0.5); `edit` may change it before returning.
StateDict net_dict(const std::function<void(StateDict&)>& edit = {}) {
  StateDict d;
  const StateDict shapes = Net().state_dict();
  for (const auto& e : shapes.entries()) {
    d.set(e.key, Tensor::full(e.value.shape(), 0.5f), e.integer);
  }
  if (edit) edit(d);
  return d;
}

// ---------------------------------------------------------------------------------------------
// The table.

std::vector<Row> rows() {
  return {
      // --- .npy
      {"npy: empty file", raises<IoError>("bad magic"), api([] { parse_npy(""); })},
      {"npy: version 4", raises<IoError>("unsupported format version 4"),
       api([] { parse_npy(std::string("\x93NUMPY\x04\x00\x10\x00", 10) + "{}"); })},
      {"npy: truncated header", raises<IoError>("runs past the end"), api([] {
         parse_npy(npy(f4_dict("(2,)"), floats({1, 2})).substr(0, 40));
       })},
      {"npy: oversized header length", raises<IoError>("is absurd"),
       api([] { parse_npy(std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12) + "{}"); })},
      {"npy: header without shape", raises<IoError>("must have 'descr', 'fortran_order' and"),
       api([] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, }")); })},
      {"npy: duplicated key", raises<IoError>("duplicated key 'shape'"), api([] {
         parse_npy(
             npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
                 "'shape': (1,), }",
                 zeros(1)));
       })},
      {"npy: unknown header key", raises<IoError>("unknown header key 'strides'"),
       api([] { parse_npy(npy("{'descr': '<f4', 'strides': (4,), }")); })},
      {"npy: big-endian float32", raises<IoError>("dtype '>f4' is not supported"), api([] {
         parse_npy(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", zeros(1)));
       })},
      {"npy: int64 dtype", raises<IoError>("dtype '<i8' is not supported"), api([] {
         parse_npy(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", zeros(2)));
       })},
      {"npy: Fortran order", raises<IoError>("Fortran-order arrays are not supported"), api([] {
         parse_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", zeros(4)));
       })},
      {"npy: rank 7", raises<IoError>("more than 6 dimensions"),
       api([] { parse_npy(npy(f4_dict("(1, 1, 1, 1, 1, 1, 1)"), zeros(1))); })},
      {"npy: negative dimension", raises<IoError>("expected a non-negative integer"),
       api([] { parse_npy(npy(f4_dict("(-1,)"))); })},
      {"npy: dimension beyond 64 bits", raises<IoError>("overflows 64 bits"),
       api([] { parse_npy(npy(f4_dict("(99999999999999999999,)"))); })},
      {"npy: shape product overflows int64", raises<IoError>("more elements than fit in 64 bits"),
       api([] { parse_npy(npy(f4_dict("(4294967296, 4294967296)"))); })},
      {"npy: 8 GiB claim without data", raises<IoError>("over the allocation cap"),
       api([] { parse_npy(npy(f4_dict("(1073741824, 2)"))); })},
      {"npy: truncated data", raises<IoError>("needs 16 data bytes, the file has 12"),
       api([] { parse_npy(npy(f4_dict("(4,)"), zeros(3))); })},
      {"npy: trailing bytes", raises<IoError>("needs 16 data bytes, the file has 17"),
       api([] { parse_npy(npy(f4_dict("(4,)"), zeros(4) + "x")); })},
      {"npy: NUL in header", raises<IoError>("NUL byte"),
       api([] { parse_npy(npy(std::string("{'descr': '<f4'\0, }", 19))); })},
      {"npy: zero-size dimension loads empty", defined(), api([] {
         const Tensor t = parse_npy(npy(f4_dict("(0, 3)")));
         EXPECT_EQ(t.shape(), (Shape{0, 3}));
         EXPECT_EQ(t.numel(), 0);
       })},
      {"npy: scalar shape ()", defined(), api([] {
         const Tensor t = parse_npy(npy(f4_dict("()"), floats({7})));
         EXPECT_EQ(t.rank(), 0);
         EXPECT_EQ(t[0], 7.0f);
       })},
      {"npy: NaN and Inf load bit-exactly", defined(), api([] {
         const Tensor t = parse_npy(npy(f4_dict("(3,)"), floats({kNaN, kInf, -kInf})));
         EXPECT_TRUE(std::isnan(t[0]));
         EXPECT_EQ(t[1], kInf);
         EXPECT_EQ(t[2], -kInf);
       })},

      // --- .safetensors
      {"safetensors: 7-byte file", raises<IoError>("too short for the 8-byte header length"),
       api([] { parse_st("1234567"); })},
      {"safetensors: header length over the 100 MiB limit", raises<IoError>("exceeds the limit"),
       api([] { parse_st(st_len(std::uint64_t{1} << 63, "{}")); })},
      {"safetensors: header length past the end", raises<IoError>("runs past the end"),
       api([] { parse_st(st_len(100, "{}")); })},
      {"safetensors: header not JSON", raises<IoError>("header is not valid JSON"),
       api([] { parse_st(st("{\"a\": ")); })},
      {"safetensors: header a JSON array", raises<IoError>("must be a JSON object"),
       api([] { parse_st(st("[1, 2]")); })},
      {"safetensors: duplicated key", raises<IoError>("tensor 'a' appears twice"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                     zeros(2)));
       })},
      {"safetensors: offsets past the data section", raises<IoError>("exceed the 8-byte data"),
       api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", zeros(2)));
       })},
      {"safetensors: overlapping ranges", raises<IoError>("overlap"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                     zeros(3)));
       })},
      {"safetensors: reversed offsets", raises<IoError>("are reversed"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", zeros(2)));
       })},
      {"safetensors: offsets disagree with shape", raises<IoError>("span 4 bytes"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", zeros(2)));
       })},
      {"safetensors: unsupported dtype", raises<IoError>("unsupported dtype 'F8_E4M3'"), api([] {
         parse_st(st(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "x"));
       })},
      {"safetensors: negative dimension", raises<IoError>("non-negative integers"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", zeros(1)));
       })},
      {"safetensors: fractional dimension", raises<IoError>("non-negative integers"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,4]}})", zeros(1)));
       })},
      {"safetensors: shape product overflows int64",
       raises<IoError>("more elements than fit in 64 bits"), api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                     R"("data_offsets":[0,0]}})"));
       })},
      {"safetensors: tensor over a lowered allocation cap", raises<IoError>("allocation cap"),
       api([] {
         with_cap(1024, [] {
           parse_st(
               st(R"({"a":{"dtype":"F32","shape":[512],"data_offsets":[0,2048]}})", zeros(512)));
         });
       })},
      {"safetensors: non-string metadata", raises<IoError>("metadata 'n' must be a string"),
       api([] { parse_st(st(R"({"__metadata__":{"n":1}})")); })},
      {"safetensors: unknown tensor field", raises<IoError>("unknown field 'stride'"), api([] {
         parse_st(
             st(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"stride":1}})", zeros(1)));
       })},
      {"safetensors: three data offsets", raises<IoError>("needs 'data_offsets' [begin, end]"),
       api([] {
         parse_st(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", zeros(2)));
       })},
      {"safetensors: empty header object", defined(),
       api([] { EXPECT_TRUE(parse_st(st("{}")).empty()); })},
      {"safetensors: zero-size tensor and metadata only", defined(), api([] {
         const StateDict d =
             parse_st(st(R"({"__metadata__":{"format":"pt"},"z":{"dtype":"F32","shape":[0,3],)"
                         R"("data_offsets":[0,0]}})"));
         ASSERT_EQ(d.size(), 1u);
         EXPECT_EQ(d.at("z").shape(), (Shape{0, 3}));
       })},

      // --- Module::load_state_dict
      {"state_dict: strict load with a missing key", raises<ValueError>("missing 'conv.bias'"),
       api([] { Net().load_state_dict(net_dict([](StateDict& d) { d.erase("conv.bias"); })); })},
      {"state_dict: strict load with an unexpected key",
       raises<ValueError>("unexpected 'conv.extra'"), api([] {
         Net().load_state_dict(
             net_dict([](StateDict& d) { d.set("conv.extra", Tensor::zeros({1})); }));
       })},
      {"state_dict: shape mismatch names both shapes",
       raises<ValueError>("'conv.weight' expected [4, 2, 3, 3], got [4, 2, 3, 2]"), api([] {
         Net().load_state_dict(net_dict([](StateDict& d) {
                                 d.set("conv.weight", Tensor::zeros({4, 2, 3, 2}));
                               }),
                               Strict::no);
       })},
      {"state_dict: integer tensor for a float parameter",
       raises<ValueError>("'bn.running_var' expected a floating-point tensor"), api([] {
         Net().load_state_dict(
             net_dict([](StateDict& d) { d.set("bn.running_var", Tensor::zeros({4}), true); }));
       })},
      {"state_dict: num_batches_tracked is optional", defined(), api([] {
         Net().load_state_dict(net_dict([](StateDict& d) { d.erase("bn.num_batches_tracked"); }));
       })},
      {"state_dict: non-strict load keeps absent values", defined(), api([] {
         Net net;
         net.load_state_dict(net_dict([](StateDict& d) { d.erase("conv.bias"); }), Strict::no);
         EXPECT_EQ(net.conv->weight[0], 0.5f);
         EXPECT_EQ(net.conv->bias[0], 0.0f);
       })},
      {"state_dict: a failed load changes nothing", defined(), api([] {
         Net net;
         const StateDict bad = net_dict([](StateDict& d) { d.set("zzz", Tensor::zeros({1})); });
         EXPECT_THROW(net.load_state_dict(bad), ValueError);
         EXPECT_EQ(net.conv->weight[0], 0.0f);
       })},
      {"state_dict: NaN weights are data, forward is defined", defined(), api([] {
         Net net;
         net.load_state_dict(net_dict([](StateDict& d) {
           d.set("conv.weight", Tensor::full({4, 2, 3, 3}, kNaN));
         }));
         const Tensor y = net.conv->forward(Tensor::full({1, 2, 5, 5}, 1.0f));
         EXPECT_EQ(y.shape(), (Shape{1, 4, 5, 5}));
         EXPECT_TRUE(std::isnan(y[0]));
       })},
      {"state_dict: at() on a missing key", raises<ValueError>("missing key 'nope'"),
       api([] { (void)StateDict().at("nope"); })},

      // --- Tensor
      {"tensor: negative dimension", raises<ShapeError>("negative dimension"), api([] {
         (void)Tensor::empty({2, -3});
       })},
      {"tensor: rank 7", raises<ShapeError>("exceeds the maximum of 6"), api([] {
         (void)Tensor::empty({1, 1, 1, 1, 1, 1, 1});
       })},
      {"tensor: shape product overflows int64",
       raises<ValueError>("more elements than fit in 64 bits"), api([] {
         (void)Tensor::empty({kInt64Max, 2});
       })},
      {"tensor: allocation over the 4 GiB cap", raises<ValueError>("over the allocation cap"),
       api([] {
         (void)Tensor::zeros({1 << 20, 1 << 11});
       })},
      {"tensor: over-cap shape whose byte count overflows int64",
       raises<ValueError>("needs more than 9223372036854775807 bytes"),
       api([] { (void)Tensor::empty({std::int64_t{1} << 62}); })},
      {"tensor: from_vector with the wrong count", raises<ShapeError>("needs 6 values, got 5"),
       api([] {
         (void)Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5});
       })},
      {"tensor: reshape to a different count", raises<ShapeError>("cannot view [2, 3]"), api([] {
         (void)Tensor::zeros({2, 3}).reshape({4, 2});
       })},
      {"tensor: reshape with two -1", raises<ShapeError>("more than one -1"), api([] {
         (void)Tensor::zeros({2, 3}).reshape({-1, -1});
       })},
      {"tensor: reshape whose known dims overflow", raises<ShapeError>("cannot view [2, 3]"),
       api([] {
         (void)Tensor::zeros({2, 3}).reshape({-1, kInt64Max / 2, 4});
       })},
      {"tensor: reshape -1 with a zero dim", raises<ShapeError>("cannot view [2, 3]"), api([] {
         (void)Tensor::zeros({2, 3}).reshape({-1, 0});
       })},
      {"tensor: slice0 out of range", raises<ShapeError>("out of bounds"), api([] {
         (void)Tensor::zeros({2, 3}).slice0(1, 3);
       })},
      {"tensor: dim index out of range", raises<ShapeError>("index 5 out of range"), api([] {
         (void)Tensor::zeros({2, 3}).dim(5);
       })},
      {"tensor: adopting an 8U Mat", raises<ShapeError>("expected a CV_32F Mat"),
       api([] { Tensor t(cv::Mat(2, 2, CV_8U, cv::Scalar(0))); })},
      {"tensor: adopting a non-continuous Mat", raises<ShapeError>("not continuous"), api([] {
         cv::Mat m(4, 4, CV_32F, cv::Scalar(0));
         Tensor t(m.colRange(0, 2));
       })},
      {"tensor: zero allocation cap", raises<ValueError>("cap must be positive"),
       api([] { set_max_tensor_bytes(0); })},
      {"threads: absurd thread count", raises<ValueError>("expected 1 to 1024 threads"),
       api([] { set_num_threads(100000); })},

      // --- image helpers
      {"image: empty Mat", raises<ValueError>("the image is empty"),
       api([] { (void)from_image(cv::Mat()); })},
      {"image: two channels", raises<ValueError>("expected 1, 3 or 4 channels, got 2"),
       api([] { (void)from_image(cv::Mat(4, 4, CV_8UC2, cv::Scalar(0))); })},
      {"image: 16-bit depth", raises<ValueError>("expected an 8U or 32F image"),
       api([] { (void)from_image(cv::Mat(4, 4, CV_16UC3, cv::Scalar(0))); })},
      {"image: std zero", raises<ValueError>("std[1] is zero"), api([] {
         (void)from_image(cv::Mat(4, 4, CV_8UC3, cv::Scalar(0)),
                          ImageOptions().std(cv::Scalar(1, 0, 1)));
       })},
      {"image: empty batch", raises<ValueError>("no images"), api([] { (void)from_images({}); })},
      {"image: batch of different sizes is resized to the first", defined(), api([] {
         const Tensor t = from_images(
             {cv::Mat(4, 4, CV_8UC3, cv::Scalar(1)), cv::Mat(4, 5, CV_8UC3, cv::Scalar(2))});
         EXPECT_EQ(t.shape(), (Shape{2, 3, 4, 4}));
       })},
      {"image: batch of 8U and 32F images", raises<ValueError>("image 1 has depth 5"), api([] {
         (void)from_images(
             {cv::Mat(4, 4, CV_8UC3, cv::Scalar(1)), cv::Mat(4, 4, CV_32FC3, cv::Scalar(2))});
       })},
      {"image: batch of different channel counts", raises<ShapeError>("image 1 has 1 channels"),
       api([] {
         (void)from_images(
             {cv::Mat(4, 4, CV_8UC3, cv::Scalar(0)), cv::Mat(4, 4, CV_8UC1, cv::Scalar(0))});
       })},
      {"image: negative target size", raises<ValueError>("target size"), api([] {
         (void)from_image(cv::Mat(4, 4, CV_8UC3, cv::Scalar(0)),
                          ImageOptions().size(cv::Size(-2, 3)));
       })},
      {"image: target size over the allocation cap", raises<ValueError>("allocation cap"), api([] {
         (void)from_image(cv::Mat(4, 4, CV_8UC3, cv::Scalar(0)),
                          ImageOptions().size(cv::Size(100000, 100000)));
       })},
      {"image: to_image of 2 channels", raises<ShapeError>("expected 1, 3 or 4 channels"), api([] {
         (void)to_image(Tensor::zeros({1, 2, 4, 4}));
       })},
      {"image: to_image sample out of range", raises<ShapeError>("sample 1 out of range"), api([] {
         (void)to_image(Tensor::zeros({1, 3, 4, 4}), 1);
       })},
      {"image: to_image scale zero", raises<ValueError>("scale is zero"), api([] {
         (void)to_image(Tensor::zeros({1, 3, 4, 4}), 0, ImageOptions().scale(0));
       })},
      {"image: to_image of an empty plane", raises<ShapeError>("empty"), api([] {
         (void)to_image(Tensor::zeros({1, 3, 0, 4}));
       })},
      {"image: to_image saturates Inf and huge values, maps NaN to 0", defined(), api([] {
         const cv::Mat img =
             to_image(Tensor::from_vector({1, 1, 1, 5}, {kNaN, kInf, -kInf, 1e30f, -1e30f}));
         ASSERT_EQ(img.type(), CV_8UC1);
         EXPECT_EQ(img.at<std::uint8_t>(0, 0), 0);
         EXPECT_EQ(img.at<std::uint8_t>(0, 1), 255);
         EXPECT_EQ(img.at<std::uint8_t>(0, 2), 0);
         EXPECT_EQ(img.at<std::uint8_t>(0, 3), 255);
         EXPECT_EQ(img.at<std::uint8_t>(0, 4), 0);
       })},

      // --- conv2d
      {"conv2d: channels of weight and input disagree",
       raises<ShapeError>("tensor 'input' expected 3 channels"), api([] {
         (void)functional::conv2d(Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({4, 3, 3, 3}));
       })},
      {"conv2d: groups that overflow the channel product",
       raises<ShapeError>("groups (4611686018427387904) exceeds the 4 channels"), api([] {
         (void)functional::conv2d(Tensor::zeros({1, 4, 5, 5}), Tensor::zeros({0, 4, 3, 3}), {},
                                  functional::Conv2dOptions().groups(std::int64_t{1} << 62));
       })},
      {"conv2d: groups 0", raises<ValueError>("groups must be positive"), api([] {
         (void)functional::conv2d(Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({4, 2, 3, 3}), {},
                                  functional::Conv2dOptions().groups(0));
       })},
      {"conv2d: stride 0", raises<ValueError>("stride must be positive"), api([] {
         (void)functional::conv2d(Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({4, 2, 3, 3}), {},
                                  functional::Conv2dOptions().stride(0));
       })},
      {"conv2d: padding over the allocation cap", raises<ValueError>("allocation cap"), api([] {
         (void)functional::conv2d(Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({4, 2, 3, 3}), {},
                                  functional::Conv2dOptions().padding(1 << 20));
       })},
      {"conv2d: kernel larger than the input", raises<ShapeError>("larger than the padded input"),
       api([] {
         (void)functional::conv2d(Tensor::zeros({1, 2, 2, 2}), Tensor::zeros({4, 2, 3, 3}));
       })},
      {"conv2d: rank-5 input", raises<ShapeError>("tensor 'input' expected rank 4"), api([] {
         (void)functional::conv2d(Tensor::zeros({1, 1, 2, 5, 5}), Tensor::zeros({4, 2, 3, 3}));
       })},
      {"conv2d: empty batch gives an empty output", defined(), api([] {
         const Tensor y =
             functional::conv2d(Tensor::zeros({0, 2, 5, 5}), Tensor::zeros({4, 2, 3, 3}));
         EXPECT_EQ(y.shape(), (Shape{0, 4, 3, 3}));
       })},
      {"conv2d: NaN input propagates to the taps that read it", defined(), api([] {
         Tensor x = Tensor::full({1, 1, 5, 5}, 1.0f);
         x[0] = kNaN;  // pixel (0, 0)
         const Tensor y = functional::conv2d(x, Tensor::full({1, 1, 3, 3}, 1.0f));
         EXPECT_TRUE(std::isnan(y[0]));  // output (0, 0) reads (0, 0)
         EXPECT_EQ(y[8], 9.0f);          // output (2, 2) does not
       })},
      {"conv2d: Inf weight gives Inf, not a crash", defined(), api([] {
         const Tensor y =
             functional::conv2d(Tensor::full({1, 1, 3, 3}, 1.0f), Tensor::full({1, 1, 3, 3}, kInf));
         EXPECT_EQ(y[0], kInf);
       })},

      // --- volumetric sampling (onnx, issue 21)
      {"grid_sample 5-D: output over the allocation cap", raises<Error>("over the allocation cap"),
       api([] {
         (void)functional::grid_sample(Tensor::zeros({1, 1 << 20, 1, 1, 1}),
                                       Tensor::zeros({1, 1024, 1024, 1, 3}));
       })},
      {"grid_sample 5-D: bicubic refused", raises<ValueError>("mode 'bicubic' supports 4-D"),
       api([] {
         (void)functional::grid_sample(
             Tensor::zeros({1, 1, 2, 2, 2}), Tensor::zeros({1, 1, 1, 1, 3}),
             functional::GridSampleOptions().mode(functional::Interpolation::bicubic));
       })},
      {"grid_sample 5-D: NaN and inf grid values read padding", defined(), api([] {
         const Tensor g =
             Tensor::from_vector({1, 1, 1, 3, 3}, {kNaN, 0, 0, kInf, -kInf, 0, 1e30f, kNaN, kInf});
         for (const auto pad : {functional::PaddingMode::zeros, functional::PaddingMode::border,
                                functional::PaddingMode::reflection}) {
           const Tensor y =
               functional::grid_sample(Tensor::full({1, 1, 2, 3, 4}, 1.0f), g,
                                       functional::GridSampleOptions().padding_mode(pad));
           for (std::int64_t i = 0; i < y.numel(); ++i) EXPECT_TRUE(y[i] == 0.0f || y[i] == 1.0f);
         }
       })},
      {"affine_grid 3-D: size whose grid overflows", raises<Error>("affine_grid"), api([] {
         (void)functional::affine_grid(Tensor::zeros({1, 3, 4}), {1, 1, 1 << 21, 1 << 21, 1 << 21});
       })},
      {"cli: grid_sample 5-D bicubic", raises<Error>("mode 'bicubic' supports 4-D input only"),
       tool([] {
         const std::string x = scratch(
             "vol.npy", npy(f4_dict("(1, 1, 2, 2, 2)"), floats(std::vector<float>(8, 1.0f))));
         const std::string g =
             scratch("vgrid.npy", npy(f4_dict("(1, 1, 1, 1, 3)"), floats({0, 0, 0})));
         return Call{{"run", "grid_sample", "--in", "input=" + x, "--in", "grid=" + g, "--set",
                      "mode=bicubic"}};
       })},

      // --- the cvattn tool
      {"cli: truncated .npy input", raises<Error>("data bytes"), tool([] {
         std::ifstream in(fixture_file("cli/conv2d_0/input.npy"), std::ios::binary);
         std::string bytes((std::istreambuf_iterator<char>(in)), {});
         const std::string p = scratch("trunc.npy", bytes.substr(0, 200));
         return Call{{"run", "conv2d", "--in", "input=" + p, "--in",
                      "weight=" + fixture_file("cli/conv2d_0/weight.npy")}};
       })},
      {"cli: .npy claiming 8 GiB", raises<Error>("over the allocation cap"), tool([] {
         const std::string p = scratch("huge.npy", npy(f4_dict("(2, 1024, 1024, 1024)")));
         return Call{{"run", "conv2d", "--in", "input=" + p, "--in",
                      "weight=" + fixture_file("cli/conv2d_0/weight.npy")}};
       })},
      {"cli: CVATTN_MAX_TENSOR_BYTES lowers the cap",
       raises<Error>("over the allocation cap of 1024 bytes"),
       tool([] { return conv_call({}, {"CVATTN_MAX_TENSOR_BYTES=1K"}); })},
      {"cli: CVATTN_MAX_TENSOR_BYTES malformed", raises<Error>("CVATTN_MAX_TENSOR_BYTES='lots'"),
       tool([] { return conv_call({}, {"CVATTN_MAX_TENSOR_BYTES=lots"}); })},
      {"cli: CVATTN_MAX_TENSOR_BYTES raised still works", defined(),
       tool([] { return conv_call({}, {"CVATTN_MAX_TENSOR_BYTES=8G"}); })},
      {"cli: absurd --threads", raises<Error>("--threads expects at most 1024"), tool([] {
         return conv_call({"--threads", "100000"});
       })},
      {"cli: padding whose output byte count overflows", raises<Error>("over the allocation cap"),
       tool([] {
         return conv_call({"--set", "padding=0409012289"});
       })},
      {"cli: setting beyond 64 bits", raises<Error>("is not an integer"), tool([] {
         return conv_call({"--set", "stride=99999999999999999999"});
       })},
      {"cli: conv2d channel mismatch", raises<Error>("tensor 'input' expected"),
       tool([] { return conv_call({}, {}, "1"); })},
      {"cli: a directory as input", raises<Error>("it is a directory"), tool([] {
         return Call{{"run", "conv2d", "--in", "input=" + scratch_dir().string(), "--in",
                      "weight=" + fixture_file("cli/conv2d_0/weight.npy")}};
       })},
      {"cli: /dev/zero as input stops at the size limit",
       raises<Error>("not a regular file, and longer than"), tool([] {
         return Call{{"run", "conv2d", "--in", "input=/dev/zero", "--in",
                      "weight=" + fixture_file("cli/conv2d_0/weight.npy")},
                     {"CVATTN_MAX_TENSOR_BYTES=1M"}};
       })},
      {"cli: /dev/null as input", raises<Error>("bad magic"), tool([] {
         return Call{{"run", "conv2d", "--in", "input=/dev/null", "--in",
                      "weight=" + fixture_file("cli/conv2d_0/weight.npy")}};
       })},
      {"cli: empty batch runs", defined(), tool([] {
         const std::string x = scratch("empty.npy", npy(f4_dict("(0, 6, 12, 14)")));
         return Call{{"run", "conv2d", "--in", "input=" + x, "--in",
                      "weight=" + fixture_file("cli/conv2d_0/weight.npy"), "--set", "groups=2",
                      "--out", "output=" + (scratch_dir() / "empty_out.npy").string()}};
       })},
      {"cli: NaN input runs", defined(), tool([] {
         const std::string x =
             scratch("nan.npy", npy(f4_dict("(1, 2, 3, 3)"), floats(std::vector<float>(18, kNaN))));
         const std::string w = scratch("w.npy", npy(f4_dict("(1, 2, 1, 1)"), floats({1, 1})));
         return Call{{"run", "conv2d", "--in", "input=" + x, "--in", "weight=" + w}};
       })},
  };
}

// ---------------------------------------------------------------------------------------------
// The runner.

struct ToolResult {
  bool exited = false;
  int status = -1;
  std::string out, err;
};

using test::slurp;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

#ifdef CVATTN_TOOL
const std::string kTool = test::tool_path(CVATTN_TOOL);
#else
const std::string kTool;  // a build without tools skips the tool rows
#endif

ToolResult run_tool(const Call& call) {
  std::string cmd = "env";
  for (const auto& e : call.env) cmd += " " + shell_quote(e);
  cmd += " " + shell_quote(kTool);
  for (const auto& a : call.args) cmd += " " + shell_quote(a);
  const fs::path out = scratch_dir() / "stdout", err = scratch_dir() / "stderr";
  cmd += " > " + shell_quote(out.string()) + " 2> " + shell_quote(err.string()) + " < /dev/null";
  const int status = std::system(cmd.c_str());
  ToolResult r;
  r.exited = WIFEXITED(status);
  if (r.exited) r.status = WEXITSTATUS(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

class Hostile : public ::testing::TestWithParam<Row> {};

TEST_P(Hostile, BehavesAsTabulated) {
  const Row& row = GetParam();
  const Expect& expect = row.expect;
  if (const Api* a = std::get_if<Api>(&row.action)) {
    if (!expect.error) {
      a->run();  // any exception fails the test
      return;
    }
    try {
      a->run();
      ADD_FAILURE() << row.what << ": expected " << expect.type_name << " containing \""
                    << expect.substring << "\", nothing was thrown";
    } catch (const std::exception& e) {
      EXPECT_TRUE(expect.is_type(e)) << row.what << ": expected " << expect.type_name << ", got "
                                     << typeid(e).name() << ": " << e.what();
      EXPECT_THAT(e.what(), HasSubstr(expect.substring)) << row.what;
    }
    return;
  }
  if (kTool.empty()) GTEST_SKIP() << "built without the cvattn tool";
  const ToolResult r = run_tool(std::get<Tool>(row.action).make());
  ASSERT_TRUE(r.exited) << row.what << ": the tool was killed by a signal; stderr: " << r.err;
  if (!expect.error) {
    EXPECT_EQ(r.status, 0) << row.what << ": " << r.err;
    EXPECT_EQ(r.err, "") << row.what;
    return;
  }
  EXPECT_EQ(r.status, 2) << row.what << ": " << r.err;
  EXPECT_THAT(r.err, StartsWith("cvattn: error: ")) << row.what;
  EXPECT_THAT(r.err, HasSubstr(expect.substring)) << row.what;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << row.what << ": " << r.err;
  EXPECT_EQ(r.out, "") << row.what;
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string name = std::to_string(info.index) + "_";
  for (const char c : info.param.what) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name += c;
    } else if (name.back() != '_') {
      name += '_';
    }
  }
  while (name.back() == '_') name.pop_back();
  return name;
}

INSTANTIATE_TEST_SUITE_P(Table, Hostile, ::testing::ValuesIn(rows()), row_name);

// Every row is distinct and the table keeps its promised size.
TEST(HostileTable, HasAtLeastThirtyDistinctRows) {
  const auto all = rows();
  EXPECT_GE(all.size(), 30u);
  std::set<std::string> names;
  for (const auto& r : all) EXPECT_TRUE(names.insert(r.what).second) << "duplicate: " << r.what;
}

}  // namespace
}  // namespace cvattn
