// libstrata as a user outside this build gets it: `cmake --install` of the
// client component into a fresh prefix, a check that the installed headers
// include nothing but each other and the standard library, and a program
// (consumer.cc) compiled with only -I<prefix>/include and the installed
// library, run against a real stratad holding a dataset the CLI ingested.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "strata/version.h"
#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

// Installs the client component into a fresh prefix, once for the suite.
class InstallTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_ = new TempDir();
    installed_ = RunCommand(
        {STRATA_CMAKE_COMMAND, "--install", STRATA_BUILD_DIR, "--prefix", prefix_->path(), "--component", "libstrata"});
  }
  static void TearDownTestSuite() {
    delete prefix_;
    prefix_ = nullptr;
  }

  void SetUp() override { ASSERT_EQ(installed_.exit_code, 0) << installed_.out << installed_.err; }

  static std::string Include() { return prefix_->Join("include"); }
  static std::string LibDir() { return prefix_->Join(STRATA_INSTALL_LIBDIR); }

  // Compiles consumer.cc against the prefix alone; returns the compiler's result.
  static CommandResult BuildConsumer(const std::string& out) {
    return RunCommand({STRATA_CXX_COMPILER, "-std=c++20", "-Wall", "-Wextra", "-Werror", "-I" + Include(),
                       STRATA_CONSUMER_SOURCE, "-o", out, "-L" + LibDir(), "-lstrata", "-Wl,-rpath," + LibDir()},
                      300);
  }

  static TempDir* prefix_;
  static CommandResult installed_;
};
TempDir* InstallTest::prefix_ = nullptr;
CommandResult InstallTest::installed_;

// The problems with one installed header: an include that is neither another
// installed strata/ header nor a standard library header (<name>, no dot).
std::vector<std::string> IncludeProblems(const fs::path& header, const fs::path& include_root) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  static const std::regex kStandard(R"([a-z_]+)");
  std::vector<std::string> problems;
  std::ifstream in(header);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, kInclude)) continue;
    const std::string name = m[2];
    const bool quoted = m[1] == "\"";
    const bool strata_header = name.starts_with("strata/") && name.find(".pb.h") == std::string::npos &&
                               fs::is_regular_file(include_root / name);
    const bool standard = !quoted && std::regex_match(name, kStandard);
    if (!strata_header && !standard) problems.push_back(header.filename().string() + ": " + line);
  }
  return problems;
}

TEST_F(InstallTest, HeadersIncludeOnlyEachOtherAndTheStandardLibrary) {
  std::set<std::string> headers;
  std::vector<std::string> problems;
  for (const auto& entry : fs::recursive_directory_iterator(Include())) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), Include()).string();
    headers.insert(relative);
    if (!relative.starts_with("strata/")) problems.push_back(relative + " is outside strata/");
    for (auto& p : IncludeProblems(entry.path(), Include())) problems.push_back(std::move(p));
  }
  EXPECT_TRUE(headers.count("strata/client.h")) << "client.h was not installed";
  EXPECT_TRUE(headers.count("strata/status.h")) << "status.h was not installed";
  EXPECT_TRUE(headers.count("strata/staging.h")) << "staging.h was not installed";
  for (const std::string& p : problems) ADD_FAILURE() << p;
}

TEST_F(InstallTest, TheHeaderCheckCatchesAnInternalInclude) {
  // The check above must be able to fail: a header that reaches outside.
  TempDir dir;
  fs::create_directories(dir.Join("strata"));
  WriteFile(dir.Join("strata/bad.h"),
            "#include <vector>\n#include \"common/status.h\"\n#include <strata/v1/data.pb.h>\n");
  EXPECT_EQ(IncludeProblems(dir.Join("strata/bad.h"), dir.path()).size(), 2u);
}

TEST_F(InstallTest, AProgramBuiltAgainstTheInstallStreamsAnEpochFromStratad) {
  TempDir work;
  const std::string consumer = work.Join("consumer");
  const CommandResult built = BuildConsumer(consumer);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;

  // A tiny dataset, ingested with the CLI as a user would.
  SingleNode node;
  const CommandResult made = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", work.Join("images"), "--format", "folder",
                                         "--samples", "37", "--size", "200", "--classes", "3"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CommandResult ingested = RunCommand(
      {StrataCliBinary(), "ingest", "--quiet", "--dataset", "tiny", work.Join("images"), "--server", node.address()});
  ASSERT_EQ(ingested.exit_code, 0) << ingested.out << ingested.err;

  const CommandResult ran = RunCommand({consumer, node.address(), "tiny", "37"});
  EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_NE(ran.out.find("consumer: 37 samples in"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find(std::string(", libstrata ") + strata::Version() + "\n"), std::string::npos) << ran.out;

  // The consumer's checks can fail: a wrong count is reported and exits 1.
  const CommandResult wrong = RunCommand({consumer, node.address(), "tiny", "38"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  EXPECT_NE(wrong.err.find("expected 38"), std::string::npos) << wrong.err;
  EXPECT_EQ(node.Stop(), 0);
}

}  // namespace
}  // namespace strata::testing
