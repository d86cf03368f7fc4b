// TLS, mutual TLS and tokens on a real stratad, with certificates made by
// openssl in the test: what is refused, with which status, and that a writer
// ingests and a reader streams an epoch exactly once over TLS.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <set>

#include "strata/v1/cluster.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

constexpr const char* kWriterToken = "writer-token-0123456789abcdef";
constexpr const char* kReaderToken = "reader-token-0123456789abcdef";
constexpr const char* kAdminToken = "admin-token-0123456789abcdef";

// Runs openssl; fails the test (and returns false) if it does not exit 0.
bool OpenSsl(std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/bin/openssl");
  CommandResult r = RunCommand(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0;
}

// A CA in `dir`/<name>.{pem,key} and certificates it signs.
class TestCa {
 public:
  TestCa(const TempDir& dir, std::string name) : dir_(dir), name_(std::move(name)) {
    OpenSsl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             Key(name_), "-out", Pem(name_), "-days", "2", "-subj", "/CN=" + name_});
  }
  // <cn>.pem and <cn>.key, with subjectAltName DNS:<cn>,IP:127.0.0.1 (and DNS:<also>), valid for `days`
  // (negative: expired).
  void Issue(const std::string& file, const std::string& cn, int days = 2, const std::string& also = "") {
    const std::string ext = dir_.Join(file + ".ext");
    WriteFile(ext, "subjectAltName=DNS:" + cn + ",IP:127.0.0.1" + also + "\n");
    OpenSsl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", Key(file), "-out",
             dir_.Join(file + ".csr"), "-subj", "/CN=" + cn});
    OpenSsl({"x509", "-req", "-in", dir_.Join(file + ".csr"), "-CA", Pem(name_), "-CAkey", Key(name_),
             "-CAcreateserial", "-out", Pem(file), "-days", std::to_string(days), "-extfile", ext});
  }
  std::string Pem(const std::string& file) const { return dir_.Join(file + ".pem"); }
  std::string Key(const std::string& file) const { return dir_.Join(file + ".key"); }
  std::string ca() const { return Pem(name_); }

 private:
  const TempDir& dir_;
  const std::string name_;
};

class TlsAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ca_ = new TestCa(*dir_, "cluster-ca");
    ca_->Issue("node-1", "node-1");
    ca_->Issue("trainer", "trainer");
    ca_->Issue("expired", "trainer", -1);
    other_ = new TestCa(*dir_, "other-ca");
    other_->Issue("stranger", "node-1");  // names a node, but signed by another CA
    WriteFile(dir_->Join("tokens"), std::string("# role token\nwriter ") + kWriterToken + " ci\nreader " +
                                        kReaderToken + " trainers\nadmin " + kAdminToken + " ops\n");
    StratadProcess::Options o;
    o.data_dir = dir_->Join("data");
    o.extra_args = {"--tls-cert", ca_->Pem("node-1"), "--tls-key",          ca_->Key("node-1"), "--tls-client-ca",
                    ca_->ca(),    "--auth-tokens",    dir_->Join("tokens"), "--log-level",      "info"};
    server_ = StratadProcess::Start(o).release();
    ASSERT_NE(server_, nullptr);
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Terminate(), 0);
      // Tokens never reach the log.
      const std::string log = server_->Log();
      EXPECT_EQ(log.find(kWriterToken), std::string::npos);
      EXPECT_EQ(log.find(kReaderToken), std::string::npos);
    }
    delete server_;
    delete other_;
    delete ca_;
    delete dir_;
  }

  static ClientOptions Options(const std::string& cert, const std::string& token) {
    ClientOptions o;
    o.tls_ca_file = ca_->ca();
    o.tls_cert_file = ca_->Pem(cert);
    o.tls_key_file = ca_->Key(cert);
    o.token = token;
    o.connect_timeout_ms = 5000;
    return o;
  }

  // The status of GetStatus through a client made with `options` (Connect's own error if it fails).
  static Status Probe(const ClientOptions& options) {
    auto client = Client::Connect(server_->address(), options);
    if (!client.ok()) return client.status();
    return client.value()->GetStatus().status();
  }

  // Ping on the peer service with `cert` of `ca` as the client certificate.
  static grpc::Status PeerPing(const TestCa& ca, const std::string& cert) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(ca_->ca());
    ssl.pem_cert_chain = ReadFile(ca.Pem(cert));
    ssl.pem_private_key = ReadFile(ca.Key(cert));
    auto stub = v1::PeerService::NewStub(grpc::CreateChannel(server_->address(), grpc::SslCredentials(ssl)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::PingRequest request;
    v1::PingReply reply;
    return stub->Ping(&context, request, &reply);
  }

  static TempDir* dir_;
  static TestCa* ca_;
  static TestCa* other_;
  static StratadProcess* server_;
};
TempDir* TlsAuthTest::dir_ = nullptr;
TestCa* TlsAuthTest::ca_ = nullptr;
TestCa* TlsAuthTest::other_ = nullptr;
StratadProcess* TlsAuthTest::server_ = nullptr;

TEST_F(TlsAuthTest, PlaintextClientIsRefused) {
  ClientOptions plain;
  plain.connect_timeout_ms = 3000;
  Status s = Probe(plain);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
}

TEST_F(TlsAuthTest, AClientsTlsFileOfTheWrongKindIsNamed) {
  // Before, a key given as the CA reached gRPC, which logged a channel error
  // and failed as if the server were down.
  ClientOptions key_as_ca = Options("trainer", kReaderToken);
  key_as_ca.tls_ca_file = ca_->Key("trainer");
  Status s = Probe(key_as_ca);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("the CA file " + ca_->Key("trainer") + " holds no PEM CERTIFICATE"), std::string::npos)
      << s.ToString();
  ClientOptions cert_as_key = Options("trainer", kReaderToken);
  cert_as_key.tls_key_file = ca_->Pem("trainer");
  s = Probe(cert_as_key);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("holds no PEM PRIVATE KEY"), std::string::npos) << s.ToString();
  // The EC keys openssl made here (one block, "EC PRIVATE KEY" or "PRIVATE KEY") pass.
  EXPECT_TRUE(Probe(Options("trainer", kReaderToken)).ok());
}

TEST_F(TlsAuthTest, ClientCertificatesFromAnotherCaOrExpiredAreRefused) {
  ClientOptions stranger = Options("trainer", kReaderToken);
  stranger.tls_cert_file = other_->Pem("stranger");
  stranger.tls_key_file = other_->Key("stranger");
  Status s = Probe(stranger);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  s = Probe(Options("expired", kReaderToken));
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  // Without a client certificate at all (mTLS is required).
  ClientOptions none = Options("trainer", kReaderToken);
  none.tls_cert_file.clear();
  none.tls_key_file.clear();
  s = Probe(none);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  // The right one works.
  s = Probe(Options("trainer", kReaderToken));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(TlsAuthTest, PeerServiceAcceptsOnlyANodeCertificate) {
  grpc::Status s = PeerPing(*ca_, "trainer");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  s = PeerPing(*ca_, "node-1");  // CN and SAN name node-1, a member
  EXPECT_TRUE(s.ok()) << s.error_message();
  s = PeerPing(*other_, "stranger");  // names node-1, wrong CA: the handshake fails
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(TlsAuthTest, TokensAndRoles) {
  EXPECT_EQ(Probe(Options("trainer", "")).code(), Code::kUnauthenticated);
  EXPECT_EQ(Probe(Options("trainer", "not-a-known-token-at-all")).code(), Code::kUnauthenticated);

  // A reader cannot ingest.
  {
    auto reader = Client::Connect(server_->address(), Options("trainer", kReaderToken));
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    IngestOptions o;
    o.dataset = "refused";
    auto writer = reader.value()->StartIngest(o);
    Status s = writer.ok() ? writer.value()->Commit().status() : writer.status();
    EXPECT_EQ(s.code(), Code::kPermissionDenied) << s.ToString();
  }
  // A writer ingests; a reader streams the epoch, every sample once.
  {
    auto writer = Client::Connect(server_->address(), Options("trainer", kWriterToken));
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    EXPECT_EQ(IngestSynthetic(*writer.value(), "secure", 500, 5).dataset.samples, 500u);
  }
  auto reader = Client::Connect(server_->address(), Options("trainer", kReaderToken));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  StreamOptions so;
  so.dataset = "secure";
  so.batch_size = 32;
  RankRun run = StreamAll(*reader.value(), so);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  std::set<uint64_t> seen;
  for (const Batch& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) EXPECT_TRUE(seen.insert(b.ids()[i]).second) << b.ids()[i];
  }
  EXPECT_EQ(seen.size(), 500u);
}

// Retention deletes versions, as `strata rm` does: a writer's ingest with
// keep_versions is refused before anything is stored; an admin's deletes.
TEST_F(TlsAuthTest, RetentionNeedsAnAdminToken) {
  auto writer = Client::Connect(server_->address(), Options("trainer", kWriterToken));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const uint64_t first = IngestSynthetic(*writer.value(), "kept", 50, 2).dataset.version;
  ASSERT_GT(first, 0u);
  SyntheticIngest how;
  how.options.keep_versions = 1;
  auto refused = TryIngestSynthetic(*writer.value(), "kept", 50, how);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kPermissionDenied) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("needs admin"), std::string::npos) << refused.status().ToString();
  const auto state = [&](Client& c, uint64_t version) {
    auto d = c.Describe("kept@" + std::to_string(version));
    return d.ok() ? d->dataset.state : VersionState::kUnspecified;
  };
  EXPECT_EQ(state(*writer.value(), first), VersionState::kSealed) << "the writer deleted a version";

  auto admin = Client::Connect(server_->address(), Options("trainer", kAdminToken));
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  auto kept = TryIngestSynthetic(*admin.value(), "kept", 50, how);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(state(*admin.value(), first), VersionState::kDeleted) << "retention deleted nothing";
  EXPECT_EQ(state(*admin.value(), kept->dataset.version), VersionState::kSealed);

  // A call that asks for retention without saying so in its metadata (where
  // the token check looks) is refused whatever its token.
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(ca_->ca());
  ssl.pem_cert_chain = ReadFile(ca_->Pem("trainer"));
  ssl.pem_private_key = ReadFile(ca_->Key("trainer"));
  auto stub = v1::DataService::NewStub(grpc::CreateChannel(
      server_->address(),
      grpc::CompositeChannelCredentials(grpc::SslCredentials(ssl), grpc::AccessTokenCredentials(kAdminToken))));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::IngestReply reply;
  auto call = stub->Ingest(&context, &reply);
  v1::IngestRequest open;
  open.mutable_open()->set_dataset("kept");
  open.mutable_open()->set_keep_versions(1);
  call->Write(open);
  call->WritesDone();
  const grpc::Status raw = call->Finish();
  EXPECT_EQ(raw.error_code(), grpc::StatusCode::PERMISSION_DENIED) << raw.error_message();
  EXPECT_NE(raw.error_message().find("strata-keep-versions"), std::string::npos) << raw.error_message();
  EXPECT_EQ(state(*admin.value(), kept->dataset.version), VersionState::kSealed);
}

// TLS and tokens without mTLS: nothing identifies a node, so the peer service
// (which can read whole shard files) needs an admin token.
TEST_F(TlsAuthTest, WithoutMutualTlsThePeerServiceNeedsAnAdminToken) {
  StratadProcess::Options o;
  o.data_dir = dir_->Join("data-no-mtls");
  o.extra_args = {"--tls-cert",    ca_->Pem("node-1"),   "--tls-key",   ca_->Key("node-1"),
                  "--auth-tokens", dir_->Join("tokens"), "--log-level", "info"};
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto ping = [&](const std::string& token) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(ca_->ca());
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
    if (!token.empty()) creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
    auto stub = v1::PeerService::NewStub(grpc::CreateChannel(server->address(), creds));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::PingRequest request;
    v1::PingReply reply;
    return stub->Ping(&context, request, &reply);
  };
  EXPECT_EQ(ping("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ping(kWriterToken).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(server->Terminate(), 0);
}

// A 3-node cluster over mutual TLS (replication, repair and version metadata
// between nodes with node certificates) loses a node to kill -9 mid-epoch:
// the others take over its share and every sample still arrives once. (The
// nodes share one certificate naming all three ids: LocalCluster gives every
// node the same flags.)
TEST(TlsClusterTest, KillNineMidEpochOverMutualTls) {
  TempDir dir;
  TestCa ca(dir, "cluster-ca");
  ca.Issue("nodes", "node-1", 2, ",DNS:node-2,DNS:node-3");
  ca.Issue("trainer", "trainer");
  WriteFile(dir.Join("tokens"), std::string("writer ") + kWriterToken + "\n");
  LocalCluster::Options o;
  o.nodes = 3;
  o.extra_args = {"--tls-cert",      ca.Pem("nodes"), "--tls-key",     ca.Key("nodes"),
                  "--tls-client-ca", ca.ca(),         "--auth-tokens", dir.Join("tokens")};
  ClientOptions co;
  co.tls_ca_file = ca.ca();
  co.tls_cert_file = ca.Pem("trainer");
  co.tls_key_file = ca.Key("trainer");
  co.token = kWriterToken;
  o.client = co;
  LocalCluster cluster(o);
  co.stall_timeout_ms = 1000;
  auto client = Client::Connect(cluster.Address(0), co);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // The nodes find each other over mTLS (heartbeats on the peer service):
  // wait until every node sees all three up.
  int up = 0;
  for (int tries = 0; tries < 400 && up < 9; ++tries) {
    up = 0;
    for (int i = 0; i < 3; ++i) {
      auto c = Client::Connect(cluster.Address(i), co);
      auto map = c.ok() ? c.value()->GetClusterMap() : Result<ClusterMap>(c.status());
      if (!map.ok()) continue;
      for (const auto& n : map->nodes) up += n.state == NodeState::kUp;
    }
    if (up < 9) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(up, 9) << "the nodes never all saw each other over mutual TLS";
  constexpr uint64_t kN = 2000;
  ASSERT_EQ(IngestSynthetic(*client.value(), "mtls", kN, 4).dataset.samples, kN);

  StreamOptions so;
  so.dataset = "mtls";
  so.batch_size = 16;
  auto stream = client.value()->OpenStream(so);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::set<uint64_t> seen;
  uint64_t steps = 0;
  for (;;) {
    Batch b;
    Status s = stream.value()->Next(&b);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
      break;
    }
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i]));
      EXPECT_TRUE(seen.insert(b.ids()[i]).second) << "sample " << b.ids()[i] << " twice";
    }
    if (++steps == 20) cluster.Kill(1);
  }
  EXPECT_GE(steps, 20u);
  EXPECT_EQ(seen.size(), kN);
}

// Counts `needle` in the process's log.
size_t LogCount(const StratadProcess& p, const std::string& needle) {
  const std::string log = p.Log();
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

// Sends SIGHUP and waits until the log holds one more line with `needle`.
bool HangUpAndWait(StratadProcess& p, const std::string& needle) {
  const size_t before = LogCount(p, needle);
  p.Signal(SIGHUP);
  return Eventually([&] { return LogCount(p, needle) > before; }, std::chrono::seconds(20));
}

// SIGHUP re-reads the token file and the certificates; new files that are
// bad leave the old ones in force, and the log says so.
TEST_F(TlsAuthTest, SighupReloadsTokensAndCertificatesAndKeepsTheOldOnesWhenBad) {
  constexpr const char* kOld = "old-reader-token-0123456789";
  constexpr const char* kNew = "new-reader-token-9876543210";
  const std::string tokens = dir_->Join("reload-tokens");
  const std::string cert = dir_->Join("reload-cert.pem");
  const std::string key = dir_->Join("reload-key.pem");
  WriteFile(tokens, std::string("reader ") + kOld + "\n");
  WriteFile(cert, ReadFile(ca_->Pem("node-1")));
  WriteFile(key, ReadFile(ca_->Key("node-1")));
  StratadProcess::Options o;
  o.data_dir = dir_->Join("data-reload");
  o.node_id = "node-1";
  o.extra_args = {"--tls-cert",    cert,   "--tls-key",   key,   "--tls-client-ca", ca_->ca(),
                  "--auth-tokens", tokens, "--log-level", "info"};
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto probe = [&](const std::string& token) {
    auto client = Client::Connect(server->address(), Options("trainer", token));
    return client.ok() ? client.value()->GetStatus().status() : client.status();
  };
  EXPECT_TRUE(probe(kOld).ok());
  EXPECT_EQ(probe(kNew).code(), Code::kUnauthenticated);

  // Rotate the token file: the old token is refused, the new one accepted.
  WriteFile(tokens, std::string("reader ") + kNew + "\n");
  ASSERT_TRUE(HangUpAndWait(*server, "SIGHUP: re-read the token file")) << server->Log();
  EXPECT_EQ(probe(kOld).code(), Code::kUnauthenticated);
  EXPECT_TRUE(probe(kNew).ok());

  // A malformed token file: the new token stays in force.
  WriteFile(tokens, "superuser whatever\n");
  ASSERT_TRUE(HangUpAndWait(*server, "SIGHUP: keeping the old tokens")) << server->Log();
  EXPECT_TRUE(probe(kNew).ok());

  // A key that is not the certificate's: the certificates served stay as they were.
  const std::string served_cert = o.data_dir + "/tls/cert.pem";
  const std::string served_key = o.data_dir + "/tls/key.pem";
  EXPECT_EQ(ReadFile(served_key), ReadFile(ca_->Key("node-1")));
  WriteFile(key, ReadFile(ca_->Key("trainer")));
  ASSERT_TRUE(HangUpAndWait(*server, "SIGHUP: keeping the old certificates")) << server->Log();
  EXPECT_NE(server->Log().find("does not belong to the certificate"), std::string::npos) << server->Log();
  EXPECT_EQ(ReadFile(served_key), ReadFile(ca_->Key("node-1")));
  EXPECT_EQ(ReadFile(served_cert), ReadFile(ca_->Pem("node-1")));
  EXPECT_TRUE(probe(kNew).ok());

  // A new certificate and key: served, and clients go on connecting.
  ca_->Issue("node-1-rotated", "node-1");
  WriteFile(cert, ReadFile(ca_->Pem("node-1-rotated")));
  WriteFile(key, ReadFile(ca_->Key("node-1-rotated")));
  ASSERT_TRUE(HangUpAndWait(*server, "SIGHUP: re-read certificate")) << server->Log();
  EXPECT_EQ(ReadFile(served_cert), ReadFile(ca_->Pem("node-1-rotated")));
  EXPECT_EQ(ReadFile(served_key), ReadFile(ca_->Key("node-1-rotated")));
  EXPECT_TRUE(probe(kNew).ok());
  EXPECT_EQ(server->Terminate(), 0);
  EXPECT_EQ(server->Log().find(kOld), std::string::npos);  // tokens never reach the log
  EXPECT_EQ(server->Log().find(kNew), std::string::npos);
}

// etcd over TLS: an "https://" endpoint is reached with the node's own
// certificates (its certificate as the client certificate, --tls-client-ca
// verifying etcd's), and etcd requires a client certificate. Without TLS
// files stratad refuses an https endpoint at start.
TEST_F(TlsAuthTest, EtcdOverTlsWithTheNodeCertificates) {
  if (auto why = EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  ca_->Issue("etcd-server", "etcd");
  auto etcd = EtcdProcess::Start(EtcdProcess::Tls{ca_->Pem("etcd-server"), ca_->Key("etcd-server"), ca_->ca(),
                                                  ca_->Pem("node-1"), ca_->Key("node-1")});
  ASSERT_NE(etcd, nullptr);
  ASSERT_EQ(etcd->url().rfind("https://", 0), 0u);

  StratadProcess::Options o;
  o.data_dir = dir_->Join("data-etcd-tls");
  o.node_id = "node-1";
  o.extra_args = {"--etcd",          etcd->url(),
                  "--cluster",       "tls",
                  "--tls-cert",      ca_->Pem("node-1"),
                  "--tls-key",       ca_->Key("node-1"),
                  "--tls-client-ca", ca_->ca(),
                  "--auth-tokens",   dir_->Join("tokens"),
                  "--log-level",     "info"};
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address(), Options("trainer", kReaderToken));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE(Eventually(
      [&] {
        auto map = client.value()->GetClusterMap();
        if (!map.ok() || map->membership != "etcd") return false;
        const NodeInfo* self = FindNodeForTest(map.value(), "node-1");
        return self != nullptr && self->state == NodeState::kUp;
      },
      std::chrono::seconds(20)))
      << server->Log();
  EXPECT_EQ(server->Terminate(), 0);

  // https without the node's TLS files: refused at start, with the reason.
  CommandResult r = RunCommand({StratadBinary(), "--data-dir", dir_->Join("data-etcd-plain"), "--listen", "127.0.0.1:0",
                                "--metrics-listen", "", "--etcd", etcd->url()},
                               30);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("is https: give --tls-cert"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace strata::testing
