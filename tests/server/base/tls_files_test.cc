// TLS files on a node: which listen addresses count as loopback (a node
// refuses to listen beyond them without TLS and tokens), and the private
// copies of the certificates that SIGHUP replaces (server/base/tls_reload.h),
// whose key is written to a new 0600 file whatever was left in its place.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/base/tls_credentials.h"
#include "server/base/tls_reload.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

TEST(TlsFilesTest, LoopbackIsAnAddressNotANameThatStartsLikeOne) {
  for (const char* local : {"127.0.0.1:7400", "127.9.8.7:1", "localhost:7400", "[::1]:7400", "::1:7400"}) {
    EXPECT_TRUE(IsLoopbackListen(local)) << local;
  }
  for (const char* remote :
       {"0.0.0.0:7400", "10.0.0.1:7400", "127.example.com:7400", "127.0.0.1.nip.io:7400", "[::]:7400", "host:7400"}) {
    EXPECT_FALSE(IsLoopbackListen(remote)) << remote;
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A temporary key file left behind (a crash between write and rename) with
// a wide mode, or a link to elsewhere: the key goes to a new 0600 file, and
// nothing is written through the link.
TEST(TlsFilesTest, TheKeyCopyIsANewPrivateFileWhateverWasLeftInItsPlace) {
  testing::TempDir dir;
  const std::string key = dir.Join("node.key"), cert = dir.Join("node.pem");
  testing::CommandResult made = testing::RunCommand(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=node-1", "-addext", "subjectAltName=IP:127.0.0.1"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string private_dir = dir.Join("tls");
  TlsFiles source;
  source.cert = cert;
  source.key = key;
  auto reloader = TlsReloader::Create(source, private_dir);
  ASSERT_TRUE(reloader.ok()) << reloader.status().ToString();

  const std::string outside = dir.Join("outside");
  testing::WriteFile(outside, "untouched");
  std::filesystem::create_symlink(outside, private_dir + "/key.pem.tmp");
  auto reloaded = reloader.value()->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  EXPECT_EQ(ReadAll(outside), "untouched") << "the key was written through a link";

  testing::WriteFile(private_dir + "/key.pem.tmp", "left over");
  ASSERT_EQ(chmod((private_dir + "/key.pem.tmp").c_str(), 0644), 0);
  reloaded = reloader.value()->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  struct stat st {};
  ASSERT_EQ(lstat(reloader.value()->served().key.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ReadAll(reloader.value()->served().key), ReadAll(key));
}

}  // namespace
}  // namespace strata
