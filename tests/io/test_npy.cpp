#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/io/npy.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor parse(const std::string& bytes) { return io::parse_npy(bytes.data(), bytes.size(), "t"); }

// A well-formed v1 header around `dict`, followed by `payload`.
std::string npy(const std::string& dict, const std::string& payload, char version = 1) {
  std::string out("\x93NUMPY", 6);
  out += version;
  out += '\0';
  std::string h = dict + "\n";
  if (version == 1) {
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  }
  return out + h + payload;
}

TEST(Npy, ReadsNumpyFloat32AndFloat64) {
  const auto fx = test::fixture("io/npy");
  const Tensor expected = io::read_npy(fx.path("expected.npy"));
  EXPECT_EQ(expected.shape(), (Shape{2, 3, 5}));
  EXPECT_TENSOR_NEAR(io::read_npy(fx.path("f32.npy")), expected, (test::Tolerance{0, 0}));
  EXPECT_TENSOR_NEAR(io::read_npy(fx.path("f64.npy")), expected, (test::Tolerance{0, 0}));
  for (const char* v : {"v1.npy", "v2.npy", "v3.npy"}) {
    EXPECT_TENSOR_NEAR(io::read_npy(fx.path(v)), expected, (test::Tolerance{0, 0})) << v;
  }
}

TEST(Npy, ReadsScalarsAndEmptyArrays) {
  const auto fx = test::fixture("io/npy");
  const Tensor s = io::read_npy(fx.path("scalar.npy"));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s[0], 2.5f);
  const Tensor e = io::read_npy(fx.path("empty.npy"));
  EXPECT_EQ(e.shape(), (Shape{0, 4}));
}

TEST(Npy, RejectsOtherDtypesAndOrders) {
  const auto fx = test::fixture("io/npy");
  EXPECT_THAT(test::Call([&] { (void)io::read_npy(fx.path("i64.npy")); }),
              ThrowsMessage<IoError>(HasSubstr("dtype '<i8' is not supported")));
  EXPECT_THAT(test::Call([&] { (void)io::read_npy(fx.path("big_endian.npy")); }),
              ThrowsMessage<IoError>(HasSubstr("dtype '>f4'")));
  EXPECT_THAT(test::Call([&] { (void)io::read_npy(fx.path("fortran.npy")); }),
              ThrowsMessage<IoError>(HasSubstr("Fortran-order")));
}

TEST(Npy, WriteThenReadRoundTrips) {
  const auto dir = std::filesystem::temp_directory_path() / "cvattn_test_npy";
  std::filesystem::create_directories(dir);
  for (const Shape& shape : {Shape{7}, Shape{2, 3, 4, 5}, Shape{1, 1, 1, 1, 1, 3}, Shape{0, 3}}) {
    const Tensor t = test::random_tensor(shape, 5);
    const std::string path = (dir / "t.npy").string();
    io::write_npy(path, t);
    EXPECT_TENSOR_NEAR(io::read_npy(path), t, (test::Tolerance{0, 0}));
  }
  std::filesystem::remove_all(dir);
}

TEST(Npy, MissingFileNamesThePath) {
  EXPECT_THAT(test::Call([] { (void)io::read_npy("/nonexistent/x.npy"); }),
              ThrowsMessage<IoError>(HasSubstr("cannot open '/nonexistent/x.npy'")));
}

TEST(Npy, WriteFailureLeavesNoFile) {
  EXPECT_THROW(io::write_npy("/nonexistent/dir/x.npy", Tensor::zeros({2})), IoError);
}

struct Malformed {
  const char* what;
  std::string bytes;
  const char* message;
};

TEST(Npy, MalformedFilesGiveClearErrors) {
  const std::string four_floats(16, '\0');
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  const std::vector<Malformed> cases = {
      {"empty", "", "bad magic"},
      {"bad magic", "\x93NUMPX\x01\x00\x00\x00", "bad magic"},
      {"version 4", npy(ok, four_floats, 4), "unsupported format version 4"},
      {"truncated length", std::string("\x93NUMPY\x02\x00\x10\x00", 10), "truncated header"},
      {"header past end", std::string("\x93NUMPY\x01\x00\xff\x7f", 10) + "{}", "runs past the end"},
      {"truncated data", npy(ok, std::string(15, '\0')), "needs 16 data bytes, the file has 15"},
      {"extra data", npy(ok, std::string(17, '\0')), "needs 16 data bytes"},
      {"not a dict", npy("[1, 2]", four_floats), "expected '{'"},
      {"missing shape", npy("{'descr': '<f4', 'fortran_order': False}", four_floats),
       "must have 'descr', 'fortran_order' and 'shape'"},
      {"unknown key",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", four_floats),
       "unknown header key 'x'"},
      {"duplicate key",
       npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", four_floats),
       "duplicated key 'descr'"},
      {"negative dim",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four_floats),
       "non-negative integer"},
      {"overflowing dim",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
           four_floats),
       "overflows 64 bits"},
      {"overflowing product",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }",
           four_floats),
       "more elements than fit in 64 bits"},
      {"absurd size",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", four_floats),
       "allocation cap"},
      {"rank 7",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,4), }", four_floats),
       "more than 6 dimensions"},
      {"unterminated string", npy("{'descr: '<f4'", four_floats), "expected ':'"},
      {"bad bool", npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", four_floats),
       "True or False"},
      {"trailing garbage", npy(ok + " junk", four_floats), "trailing characters"},
      {"object dtype", npy("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", four_floats),
       "dtype '|O'"},
      {"NUL in header", npy(std::string("{'descr': '<f4'\0", 16), four_floats), "NUL"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(test::Call([&] { (void)parse(c.bytes); }),
                ThrowsMessage<IoError>(HasSubstr(c.message)))
        << c.what;
  }
}

}  // namespace
}  // namespace cvattn
