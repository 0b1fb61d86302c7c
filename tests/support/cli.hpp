#pragma once
// Running the cvattn binary from end-to-end tests (docs/cli.md): a GoogleTest fixture
// with a private scratch folder, run(args) capturing exit status, stdout and stderr, and the
// contract's check for input errors (exit 2, one stderr line "cvattn: error: ...", no stdout).
// run(args) needs CVATTN_TOOL; run_program(binary, args) runs any program (the samples).
// CVATTN_TEST_TOOL in the environment overrides the compiled-in tool path: .ci/run's ASan stage
// links the release stage's test objects against its own library and tool (tests/CMakeLists.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cvattn/io/safetensors.hpp"
#include "support/fixtures.hpp"

namespace cvattn::test {

struct CliResult {
  int exit_code = -1;
  bool signalled = false;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Fixture parameters spelled as --set values: "2,3" for a pair, "3,5" or "3" for an integer or
// an integer list (as given), "true"/"false" for a boolean.
inline std::string pair_arg(const nlohmann::json& v) {
  return std::to_string(v[0].get<int>()) + "," + std::to_string(v[1].get<int>());
}
inline std::string list_arg(const nlohmann::json& v) {
  if (v.is_number()) return std::to_string(v.get<int>());
  std::string s;
  for (const auto& k : v) s += (s.empty() ? "" : ",") + std::to_string(k.get<int>());
  return s;
}
inline std::string bool_arg(const nlohmann::json& v) { return v.get<bool>() ? "true" : "false"; }

// The tool to run: `built_in` (the CVATTN_TOOL of this test program) unless CVATTN_TEST_TOOL is
// set.
inline std::string tool_path(const char* built_in) {
  const char* env = std::getenv("CVATTN_TEST_TOOL");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(built_in);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("cvattn_cli_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

#ifdef CVATTN_TOOL
  CliResult run(const std::string& args) { return run_program(tool_path(CVATTN_TOOL), args); }
#endif
  CliResult run_program(const std::string& program, const std::string& args) {
    const std::string cmd = "'" + program + "' " + args + " > '" + (dir_ / "stdout").string() +
                            "' 2> '" + (dir_ / "stderr").string() + "' < /dev/null";
    const int status = std::system(cmd.c_str());
    CliResult r;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    r.signalled = WIFSIGNALED(status);
    r.out = slurp(dir_ / "stdout");
    r.err = slurp(dir_ / "stderr");
    return r;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Writes raw bytes to a file in the test folder and returns its path.
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  // The fixture's weights with one key erased and/or one key set, written to the test folder.
  std::string edited_weights(const Fixture& fx, const std::string& erase,
                             const std::string& key = "", const Tensor& value = {}) {
    StateDict d = io::load_safetensors(fx.path("weights.safetensors"));
    if (!erase.empty()) d.erase(erase);
    if (!key.empty()) d.set(key, value);
    const std::string file = path("edited.safetensors");
    io::save_safetensors(file, d);
    return file;
  }
  void expect_input_error(const CliResult& r, const std::string& message) {
    SCOPED_TRACE("expecting '" + message + "'");
    EXPECT_FALSE(r.signalled);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, ::testing::StartsWith("cvattn: error: "));
    EXPECT_THAT(r.err, ::testing::HasSubstr(message));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // The --repeat report of a run with --threads 1: one JSON line with the op, the repeat count
  // and the timings.
  void expect_repeat_report(const CliResult& r, const std::string& op, int repeat) {
    EXPECT_THAT(r.out, ::testing::MatchesRegex("\\{\"op\":\"" + op +
                                               "\",\"repeat\":" + std::to_string(repeat) +
                                               ",\"threads\":1,\"median_ms\":[0-9.]+,"
                                               "\"min_ms\":[0-9.]+\\}\n"));
  }
  // True if the folder holds no leftover temporary file of an aborted write.
  bool no_temporary_files() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      if (e.path().string().find(".tmp") != std::string::npos) return false;
    }
    return true;
  }
  // Every file left in the test folder besides the captured stdout/stderr, sorted.
  std::vector<std::string> written() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name != "stdout" && name != "stderr") out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::filesystem::path dir_;
};

}  // namespace cvattn::test
