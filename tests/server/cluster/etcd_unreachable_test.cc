// etcd membership without an etcd to reach: Start gives up naming the
// endpoints; the factory builds the etcd kind; the client's key arithmetic.
#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <string>

#include "server/cluster/etcd_client.h"
#include "server/cluster/etcd_membership_impl.h"
#include "tests/support/etcd_process.h"

namespace strata {
namespace {

using testing::EtcdProcess;
using Clock = std::chrono::steady_clock;

boost::asio::any_io_executor Background() {
  static boost::asio::thread_pool pool(2);
  return pool.get_executor();
}

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

TEST(EtcdClientTest, PrefixEnd) {
  EXPECT_EQ(EtcdClient::PrefixEnd("/a/"), "/a0");
  EXPECT_EQ(EtcdClient::PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(EtcdClient::PrefixEnd(std::string("\xff", 1)), std::string(1, '\0'));
}

TEST(EtcdMembershipUnreachableTest, StartIsUnavailableNamingTheEndpoints) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(EtcdProcess::FreePort());
  NodeConfig c;
  c.cluster.membership = "etcd";
  c.cluster.etcd_endpoints = {endpoint};
  v1::NodeInfo self;
  self.set_id("node-1");
  EtcdMembershipOptions options;
  options.start_timeout = std::chrono::milliseconds(1000);
  EtcdMembership m(c, self, Background(), options);
  const auto started = Clock::now();
  const Status s = m.Start();
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find(endpoint), std::string::npos) << s.ToString();
  EXPECT_LT(MsSince(started), 5000);
  m.Stop();
}

TEST(EtcdMembershipUnreachableTest, FactoryBuildsAnEtcdMembership) {
  NodeConfig c;
  c.cluster.membership = "etcd";
  c.cluster.etcd_endpoints = {"127.0.0.1:1"};
  v1::NodeInfo self;
  self.set_id("node-1");
  auto m = Membership::Create(c, self, nullptr, Background());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->Current().membership(), "etcd");
}

}  // namespace
}  // namespace strata
