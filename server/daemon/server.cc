#include "server/daemon/server.h"

#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/allocator.h"
#include "common/units.h"
#include "server/base/open_files.h"
#include "server/base/thread_priority.h"
#include "server/base/tls_reload.h"
#include "server/storage/decompressed_cache.h"
#include "server/storage/process_memory.h"
#include "server/storage/shard_format.h"

namespace strata {

Result<std::unique_ptr<Server>> Server::Open(const NodeConfig& config, const SecurityConfig& security) {
  std::unique_ptr<Server> server(new Server(config, security));
  STRATA_RETURN_IF_ERROR(server->Build());
  STRATA_RETURN_IF_ERROR(server->Recover());
  return server;
}

Result<std::unique_ptr<Server>> Server::Start(const NodeConfig& config, const SecurityConfig& security) {
  STRATA_RETURN_IF_ERROR(CheckTlsFiles(security.tls));
  if (!security.auth_tokens.empty() && !security.tls.enabled()) {
    return Status::InvalidArgument(
        "--auth-tokens needs --tls-cert and --tls-key: a token sent in plaintext can be "
        "read by anyone on the network");
  }
  const bool exposed =
      !IsLoopbackListen(config.listen) || (!config.peer_listen.empty() && !IsLoopbackListen(config.peer_listen));
  if (exposed && !security.insecure && (!security.tls.enabled() || security.auth_tokens.empty())) {
    const std::string& where = IsLoopbackListen(config.listen) ? config.peer_listen : config.listen;
    return Status::FailedPrecondition(
        "refusing to serve " + where +
        " without TLS and tokens: give --tls-cert, --tls-key and "
        "--auth-tokens (and --tls-client-ca for a cluster), or --insecure to let anyone who reaches the port read, "
        "write and delete data");
  }
  for (const std::string& endpoint : config.cluster.etcd_endpoints) {
    if (endpoint.rfind("https://", 0) == 0 && !security.tls.enabled()) {
      return Status::InvalidArgument("etcd endpoint " + endpoint +
                                     " is https: give --tls-cert and --tls-key (the "
                                     "node's certificate is its client certificate to etcd) and --tls-client-ca "
                                     "(the CA that signed etcd's certificate)");
    }
  }
  auto server = Open(config, security);
  if (!server.ok()) return server.status();
  STRATA_RETURN_IF_ERROR(server.value()->Serve());
  return server;
}

Server::Server(NodeConfig config, SecurityConfig security)
    : config_(std::move(config)), security_(std::move(security)) {}

// The bytes all streams together may hold built and not yet sent: half of
// memory_budget when one is set (the block cache adapts to the rest), else
// unbounded (each stream is still bounded by prefetch_batches).
namespace {
uint64_t StreamBufferBudget(const NodeConfig& config) { return config.memory_budget / 2; }
}  // namespace

Status Server::Build() {
  // Storage.
  dir_ = std::make_unique<DataDir>(config_.data_dir);
  STRATA_RETURN_IF_ERROR(dir_->Init());
  metrics_ = std::make_unique<Metrics>(config_.node_id);
  metrics_->datasets().SetLimit(config_.metrics_max_datasets);
  disk_ = std::make_unique<DiskSpace>(DiskSpace::Options{
      config_.node_id, config_.data_dir, ParseByteThreshold(config_.disk_low_watermark).value_or(ByteThreshold{}),
      ParseByteThreshold(config_.disk_high_watermark).value_or(ByteThreshold{}), config_.test_disk_free_bytes});
  STRATA_RETURN_IF_ERROR(disk_->Sample());
  if (disk_->BelowHigh()) {
    spdlog::warn("disk: {} free of {} on {}: below the {} watermark", FormatBytes(disk_->Last().free_bytes),
                 FormatBytes(disk_->Last().total_bytes), config_.data_dir, disk_->BelowLow() ? "low" : "high");
  }
  metrics_->AddScrapeGauges("disk", [disk = disk_.get()] {
    const DiskFigures f = disk->Last();
    return std::map<std::string, double>{{"free_bytes", static_cast<double>(f.free_bytes)},
                                         {"total_bytes", static_cast<double>(f.total_bytes)},
                                         {"low_watermark_bytes", static_cast<double>(disk->LowBytes())},
                                         {"high_watermark_bytes", static_cast<double>(disk->HighBytes())}};
  });
  auto kv = KvStore::OpenRocksDb(dir_->MetaDir(), KvOptions{});
  if (!kv.ok()) return kv.status();
  kv_ = std::move(kv).value();
  metrics_->AddScrapeGauges("rocksdb", [kv = kv_.get()] {
    std::map<std::string, double> out;
    for (const auto& [k, v] : kv->Stats()) out[k] = static_cast<double>(v);
    return out;
  });
  catalog_ = std::make_unique<Catalog>(kv_.get());
  // Shard readers kept open between uses, within what the open-file limit leaves.
  const uint64_t open_files = OpenFileSoftLimit();
  cache_ = std::make_unique<DatasetCache>(catalog_.get(), dir_.get(), KeptReaderLimit(open_files));
  spdlog::info("shard readers: up to {} kept open (open-file limit {})", cache_->readers().limit(),
               open_files == 0 ? std::string("unlimited") : std::to_string(open_files));
  metrics_->AddScrapeGauges("shard_readers", [cache = cache_.get()] {
    return std::map<std::string, double>{{"open", static_cast<double>(ShardReader::OpenCount())},
                                         {"kept", static_cast<double>(cache->readers().kept())},
                                         {"kept_limit", static_cast<double>(cache->readers().limit())}};
  });
  files_ = std::make_unique<LocalFiles>(dir_.get());
  // The executors, each owned by this Server and joined by Stop() (see the
  // members' comments in server.h, and docs/design.md, "Threads").
  pool_ = std::make_unique<boost::asio::thread_pool>(config_.io_threads);
  lanes_ = std::make_unique<StreamLanes>(config_.io_threads);
  DecompressedCache::Process().SetCapacity(DecompressedCacheBytes(config_));
  if (DecompressedCacheBytes(config_) < config_.decompressed_cache_bytes) {
    spdlog::info("decompressed_cache_bytes {} lowered to {}: a quarter of memory_budget",
                 FormatBytes(config_.decompressed_cache_bytes), FormatBytes(DecompressedCacheBytes(config_)));
  }
  blocks_ = std::make_unique<BlockCache>(
      BlockCacheOptions{config_.cache_bytes, config_.cache_block_bytes, config_.memory_budget}, pool_.get(),
      metrics_.get());
  // A reader the dataset cache lets go of closes once the cache's idle blocks of it are evicted too.
  cache_->readers().OnRelease(
      [blocks = blocks_.get()](std::vector<const ShardReader*> readers) { blocks->Forget(std::move(readers)); });

  background_ = std::make_unique<boost::asio::thread_pool>(2);
  scrub_pool_ = std::make_unique<boost::asio::thread_pool>(1);
  boost::asio::post(*scrub_pool_, [] {
    if (Status s = RunAtBackgroundPriority("strata-scrub"); !s.ok()) {
      spdlog::warn("the scrubber runs at normal priority: {}", s.ToString());
    }
  });
  peer_pool_ = std::make_unique<boost::asio::thread_pool>(2);
  admin_pool_ = std::make_unique<boost::asio::thread_pool>(1);
  rebuild_pool_ = std::make_unique<boost::asio::thread_pool>(1);

  // Cluster: a one-node view until Serve() joins.
  view_ = std::make_unique<ClusterView>(config_.node_id, metrics_.get());
  peers_ = std::make_unique<PeerClients>(view_.get());
  peer_disks_ = std::make_unique<PeerDisks>(disk_.get(), view_.get(), background_->get_executor(),
                                            std::chrono::milliseconds(config_.cluster.heartbeat_interval_ms));
  versions_ =
      std::make_unique<VersionSync>(catalog_.get(), dir_.get(), files_.get(), peers_.get(), view_.get(), cache_.get());
  deleter_ = std::make_unique<VersionDeleter>(catalog_.get(), versions_.get(), view_.get());
  replicator_ = std::make_unique<Replicator>(config_.node_id, dir_.get(), peers_.get(), metrics_.get(), view_.get());
  repairer_ = std::make_unique<Repairer>(
      Repairer::Deps{view_.get(), peers_.get(), catalog_.get(), dir_.get(), files_.get(), cache_.get(), versions_.get(),
                     metrics_.get(), disk_.get()},
      background_->get_executor(), std::chrono::milliseconds(config_.cluster.repair_interval_ms),
      config_.cluster.repair_bytes_per_sec);
  view_->Subscribe([r = repairer_.get()] { r->Kick(); });
  view_->Subscribe([p = peers_.get()] { p->CancelCallsToNodesDown(); });
  records_ = std::make_unique<PeerRecords>(view_.get(), peers_.get(), cache_.get(), dir_.get(), files_.get(),
                                           repairer_.get(), metrics_.get(), rebuild_pool_->get_executor());
  scrubber_ = std::make_unique<Scrubber>(
      files_.get(), dir_.get(), metrics_.get(), [r = records_.get()](const v1::FileRef& f) { r->Quarantine(f); },
      config_.cluster.scrub_bytes_per_sec, scrub_pool_->get_executor(),
      Scrubber::StripeDeps{catalog_.get(), RebuildDeps{view_.get(), peers_.get(), dir_.get(), files_.get()}});

  // Ingest and serving.
  active_streams_ = std::make_unique<ActiveWork>();
  active_ingests_ = std::make_unique<ActiveWork>();
  active_copies_ = std::make_unique<ActiveWork>();
  status_ = std::make_unique<NodeStatus>(
      config_, NodeStatus::Deps{catalog_.get(), dir_.get(), view_.get(), repairer_.get(), active_streams_.get(),
                                active_ingests_.get(), metrics_.get(), disk_.get(), peer_disks_.get()});
  IngestLimits ingest_limits;
  ingest_limits.default_shard_target_bytes = config_.shard_target_bytes;
  std::unique_ptr<EtcdClient> numbers_etcd;
  if (config_.cluster.membership == "etcd") {
    EtcdClient::Options etcd;
    etcd.endpoints = config_.cluster.etcd_endpoints;
    // https:// endpoints: the node's certificate, as membership's client uses
    // (that one is made in Serve, from the copies SIGHUP replaces).
    if (security_.tls.enabled()) etcd.https_credentials = MakePeerChannelCredentials(security_.tls);
    numbers_etcd = std::make_unique<EtcdClient>(etcd);
  }
  std::vector<std::string> listed;
  for (const auto& n : config_.cluster.nodes) listed.push_back(n.id);
  numbers_ = std::make_unique<VersionNumbers>(catalog_.get(), std::move(numbers_etcd),
                                              "/strata/" + config_.cluster.name + "/", std::move(listed));
  ingest_ = std::make_unique<IngestCoordinator>(
      IngestCoordinator::Deps{view_.get(), catalog_.get(), dir_.get(), files_.get(), replicator_.get(), versions_.get(),
                              metrics_.get(), disk_.get(), peer_disks_.get(), numbers_.get(), deleter_.get(), nullptr,
                              peers_.get(), peer_pool_.get()},
      ingest_limits);
  multi_ingests_ =
      std::make_unique<MultiIngests>(MultiIngests::Deps{view_.get(), catalog_.get(), dir_.get(), versions_.get(),
                                                        metrics_.get(), numbers_.get(), ingest_.get()},
                                     ingest_limits);
  ingest_->set_multi(multi_ingests_.get());
  writer_watch_ =
      std::make_unique<WriterWatch>(view_.get(), peers_.get(), multi_ingests_.get(), peer_pool_->get_executor());
  aborter_ = std::make_unique<IngestAborter>(multi_ingests_.get(), peers_.get(), view_.get());
  if (config_.memory_budget > 0) {
    // Freed heap that malloc keeps (between streams, after ingests and
    // copies) is no use to the budget: given back while the node is over it,
    // idle too (the block cache governs only while streams read).
    heap_trim_ = std::make_unique<PeriodicTask>(background_->get_executor(), [budget = config_.memory_budget] {
      const Result<uint64_t> rss = ProcessResidentBytes();
      if (rss.ok() && rss.value() > budget) ReleaseFreeHeap();
      return std::chrono::milliseconds(10000);
    });
  }
  StreamLimits stream_limits;
  stream_limits.max_part_bytes = config_.max_part_bytes;
  stream_limits.read_ahead_steps = config_.read_ahead_steps;
  streams_ = std::make_unique<StreamOpener>(
      cache_.get(), catalog_.get(), metrics_.get(), stream_limits,
      StreamServer{config_.node_id, records_.get(), config_.cache_bytes > 0 ? blocks_.get() : nullptr});

  // The services.
  ingest_watch_ = std::make_unique<IngestWatch>(std::chrono::seconds(config_.ingest_idle_timeout_s));
  if (config_.ingest_idle_timeout_s != 0) {
    // Swept at a tenth of the timeout (1-10 s): a quiet client is cut off within 10% of it.
    const auto every =
        std::chrono::milliseconds(std::clamp<uint64_t>(config_.ingest_idle_timeout_s * 100, 1000, 10000));
    ingest_sweep_ = std::make_unique<PeriodicTask>(background_->get_executor(), [watch = ingest_watch_.get(), every] {
      watch->Sweep(SteadyNowNs());
      return every;
    });
  }
  DataServiceImpl::Deps data{pool_->get_executor(), lanes_.get(),          streams_.get(),
                             ingest_.get(),         catalog_.get(),        metrics_.get(),
                             active_streams_.get(), active_ingests_.get(), config_.max_streams};
  data.max_ingests = config_.max_ingests;
  data.ingest_watch = ingest_watch_.get();
  data.prefetch_batches = config_.prefetch_batches;
  data.stream_buffer_bytes = StreamBufferBudget(config_);
  data.tokens_checked = !security_.auth_tokens.empty();
  data_ = std::make_unique<DataServiceImpl>(data);
  admin_ = std::make_unique<AdminServiceImpl>(catalog_.get(), status_.get(), view_.get(), deleter_.get(),
                                              aborter_.get(), admin_pool_->get_executor());
  peer_ = std::make_unique<PeerServiceImpl>(
      PeerServiceImpl::Deps{peer_pool_->get_executor(), view_.get(), dir_.get(), files_.get(), records_.get(),
                            versions_.get(), repairer_.get(), peers_.get(), disk_.get(), multi_ingests_.get(),
                            ingest_.get(), active_copies_.get(), &draining_});
  return Status::OK();
}

Status Server::Recover() {
  auto temps = dir_->RemoveTempFiles();
  if (!temps.ok()) return temps.status();
  if (temps.value() > 0) spdlog::warn("recovery: removed {} temporary files left by a crash", temps.value());
  auto versions = catalog_->ListVersions(/*include_unsealed=*/true);
  if (!versions.ok()) return versions.status();
  for (const auto& v : versions.value()) {
    if (v.info().state() != v1::VERSION_INGESTING) continue;
    // Never acknowledged: the client saw no seal, so the version goes.
    spdlog::warn("recovery: {}@{} was ingesting when the node stopped; removing it", v.info().name(),
                 v.info().version());
    STRATA_RETURN_IF_ERROR(dir_->RemoveVersion(v.info().name(), v.info().version()));
    STRATA_RETURN_IF_ERROR(catalog_->AbortVersion(v.info().name(), v.info().version()));
  }
  STRATA_RETURN_IF_ERROR(files_->Load());
  // Aborted or deleted versions whose files are still here (a crash between
  // the catalog write and the removal, or copies from an aborted ingest).
  auto dead = versions_->RemoveDeadCopies();
  if (!dead.ok()) return dead.status();
  if (dead.value() > 0) spdlog::warn("recovery: removed the files of {} aborted or deleted versions", dead.value());
  return Status::OK();
}

// The options both ports share: message sizes, keepalives, an exclusive port.
void Server::SetServerOptions(grpc::ServerBuilder* b) const {
  grpc::ServerBuilder& builder = *b;
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(-1);  // batches are bounded by max_part_bytes instead
  // Keepalive, set deliberately (README, "Keepalives and timeouts"): the
  // server pings a silent client every 60 s and drops the connection after
  // 20 s without an answer (a crashed trainer's streams stop holding memory);
  // it accepts the clients' 30 s keepalive pings, with or without calls, and
  // never closes a connection for pinging (a too_many_pings GOAWAY would end
  // every stream on it: a failover with no fault).
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10 * 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // gRPC binds with SO_REUSEPORT by default: a second stratad on a port this
  // one holds would then start and take half its connections. Without it,
  // that second one fails to listen, saying so.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

// The peer address this node advertises: empty without --peer-listen; the
// bound one, with cluster.advertise's host where it listens on every address.
std::string Server::AdvertisedPeerAddress() const {
  if (peer_address_.empty()) return "";
  std::string host, advertised_host;
  int port = 0, advertised_port = 0;
  if (!ParseHostPort(peer_address_, &host, &port).ok()) return peer_address_;
  const bool wildcard = host == "0.0.0.0" || host == "[::]" || host == "::";
  if (!wildcard || config_.cluster.advertise.empty() ||
      !ParseHostPort(config_.cluster.advertise, &advertised_host, &advertised_port).ok()) {
    return peer_address_;
  }
  return advertised_host + ":" + std::to_string(port);
}

Status Server::Serve() {
  std::string host;
  int port = 0;
  if (!config_.metrics_listen.empty()) {
    STRATA_RETURN_IF_ERROR(metrics_->StartExposer(config_.metrics_listen));
    STRATA_RETURN_IF_ERROR(ParseHostPort(config_.metrics_listen, &host, &port));
    metrics_address_ = host + ":" + std::to_string(metrics_->exposer_port());
  }

  grpc::EnableDefaultHealthCheckService(true);
  TlsFiles tls = security_.tls;
  if (tls.enabled()) {
    // gRPC serves copies that only SIGHUP replaces (server/base/tls_reload.h).
    auto reloader = TlsReloader::Create(security_.tls, dir_->root() + "/tls");
    if (!reloader.ok()) return reloader.status();
    tls_ = std::move(reloader).value();
    tls = tls_->served();
    auto auth = AuthProcessor::Create(
        {security_.auth_tokens, !security_.tls.client_ca.empty(), [view = view_.get()](std::string_view id) {
           const v1::ClusterMap map = view->Current();
           for (const auto& n : map.nodes()) {
             if (n.id() == id) return true;
           }
           return false;
         }});
    if (!auth.ok()) return auth.status();
    auth_ = std::move(auth).value();
    SetPeerChannelCredentials(MakePeerChannelCredentials(tls));
  }
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(config_.listen, MakeServerCredentials(tls, auth_), &bound_port);
  SetServerOptions(&builder);
  builder.RegisterService(data_.get());
  builder.RegisterService(admin_.get());
  // The peer service on the data port, unless it has its own (--peer-listen):
  // then the data port does not serve it at all, and a firewall can keep
  // everyone but the other nodes away from it.
  if (config_.peer_listen.empty()) builder.RegisterService(peer_.get());
  grpc_ = builder.BuildAndStart();
  if (!grpc_ || bound_port == 0) {
    grpc_.reset();
    return Status::Unavailable("cannot listen on " + config_.listen + " (is another process using it?)");
  }
  STRATA_RETURN_IF_ERROR(ParseHostPort(config_.listen, &host, &port));
  address_ = host + ":" + std::to_string(bound_port);
  if (!config_.peer_listen.empty()) {
    grpc::ServerBuilder peer_builder;
    int peer_port = 0;
    peer_builder.AddListeningPort(config_.peer_listen, MakeServerCredentials(tls, auth_), &peer_port);
    SetServerOptions(&peer_builder);
    peer_builder.RegisterService(peer_.get());
    peer_grpc_ = peer_builder.BuildAndStart();
    if (!peer_grpc_ || peer_port == 0) {
      peer_grpc_.reset();
      return Status::Unavailable("cannot listen on " + config_.peer_listen + " (is another process using it?)");
    }
    STRATA_RETURN_IF_ERROR(ParseHostPort(config_.peer_listen, &host, &port));
    peer_address_ = host + ":" + std::to_string(peer_port);
  }

  // Join the cluster under the addresses others can use.
  v1::NodeInfo self;
  self.set_id(config_.node_id);
  self.set_address(config_.cluster.advertise.empty() ? address_ : config_.cluster.advertise);
  self.set_peer_address(AdvertisedPeerAddress());
  self.set_metrics_address(metrics_address_);
  self.set_state(v1::NODE_UP);
  self.set_zone(config_.cluster.zone);
  self.set_rack(config_.cluster.rack);
  for (const auto& n : config_.cluster.nodes) {  // the static list may name this node's domains instead
    if (n.id != config_.node_id) continue;
    if (self.zone().empty()) self.set_zone(n.zone);
    if (self.rack().empty()) self.set_rack(n.rack);
  }
  auto membership = Membership::Create(config_, self, peers_.get(), background_->get_executor(), disk_.get());
  if (!membership.ok()) return membership.status();
  membership_ = std::move(membership).value();
  membership_->Subscribe([view = view_.get()](const v1::ClusterMap& map) { view->Update(map); });
  STRATA_RETURN_IF_ERROR(membership_->Start());
  view_->Update(membership_->Current());
  peer_disks_->Start();
  repairer_->Start();
  scrubber_->Start();
  writer_watch_->Start();
  if (heap_trim_) heap_trim_->Start();
  if (ingest_sweep_) ingest_sweep_->Start();
  // Tell the others about versions this node aborted while it was down.
  versions_->BroadcastOwnAborted();
  if (!config_.metrics_listen.empty()) metrics_->SetReadiness([this] { return NotReadyReason(); });
  grpc_->GetHealthCheckService()->SetServingStatus(true);
  return Status::OK();
}

Server::~Server() { Stop().IgnoreError(); }

Status Server::Reload() {
  Status result;
  if (tls_) {
    auto certs = tls_->Reload();
    if (certs.ok()) {
      spdlog::info("SIGHUP: re-read {}; served within {} s", certs.value(), kCertRefreshSeconds);
    } else {
      spdlog::error("SIGHUP: keeping the old certificates: {}", certs.status().ToString());
      result = certs.status();
    }
  }
  if (auth_ && !security_.auth_tokens.empty()) {
    Status tokens = auth_->Reload();
    if (tokens.ok()) {
      spdlog::info("SIGHUP: re-read the token file {}", security_.auth_tokens);
    } else {
      spdlog::error("SIGHUP: keeping the old tokens: {}", tokens.ToString());
      if (result.ok()) result = tokens;
    }
  }
  return result;
}

Status Server::Stop() {
  if (stopped_) return Status::OK();
  stopped_ = true;
  if (grpc_) {
    const auto timeout = std::chrono::milliseconds(config_.drain_timeout_ms);
    spdlog::info("draining: {} streams, {} ingests and {} incoming copies open; waiting up to {} ms",
                 active_streams_->count(), active_ingests_->count(), active_copies_->count(), timeout.count());
    draining_ = true;
    // From here /readyz no longer calls into this Server, which may be
    // destroyed before the exposer stops.
    metrics_->SetReadiness([] { return std::string("draining: shutting down"); });
    grpc_->GetHealthCheckService()->SetServingStatus(false);
    data_->BeginDrain();
    // Streams end after their current batch and new ones are refused; ingests
    // get the drain time to commit. gRPC's own Shutdown would also wait out its
    // deadline for connections that are merely open (an idle trainer's channel),
    // so wait for our calls here (woken by the last one to end) and then shut
    // gRPC down at once.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // Replicas being received for other nodes' ingests too: cut off, they
    // would fail those ingests' write policy.
    if (active_streams_->WaitIdle(deadline) && active_ingests_->WaitIdle(deadline)) {
      active_copies_->WaitIdle(deadline);
    } else if (active_ingests_->count() > 0) {
      // Ingests still open: each is ended saying why (gRPC's shutdown would
      // say "Cancelling all calls"). One busy with a message is ended once it
      // waits for the next: up to a second more.
      const auto last = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      size_t ended = 0;
      while (active_ingests_->count() > 0 && std::chrono::steady_clock::now() < last) {
        ended += ingest_watch_->EndAllForShutdown();
        active_ingests_->WaitIdle(std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
      }
      // The statuses are sent; the shutdown below closes the connections at
      // once, and a status still in a send buffer would be lost with them.
      if (ended > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    grpc_->Shutdown(std::chrono::system_clock::now());  // cancels whatever is left
    grpc_->Wait();
    if (peer_grpc_) {
      peer_grpc_->Shutdown(std::chrono::system_clock::now());
      peer_grpc_->Wait();
    }
  }
  if (!kv_) return Status::OK();  // Open failed before storage opened
  // The background work, then the pool, then storage.
  if (writer_watch_) writer_watch_->Stop();
  if (heap_trim_) heap_trim_->Stop();
  if (ingest_sweep_) ingest_sweep_->Stop();
  if (scrubber_) scrubber_->Stop();
  if (repairer_) repairer_->Stop();
  if (peer_disks_) peer_disks_->Stop();
  if (replicator_) replicator_->Stop();
  if (membership_) membership_->Stop();
  if (background_) background_->join();
  if (scrub_pool_) scrub_pool_->join();
  if (peer_pool_) peer_pool_->join();
  if (admin_pool_) admin_pool_->join();
  if (rebuild_pool_) rebuild_pool_->join();
  if (lanes_) lanes_->Join();
  if (pool_) pool_->join();
  cache_->readers().OnRelease(nullptr);  // blocks_ goes before cache_
  Status closed = kv_->Close();
  spdlog::info("stopped: storage closed{}", closed.ok() ? "" : " with an error: " + closed.ToString());
  return closed;
}

std::string Server::NotReadyReason() const {
  if (draining_) return "draining: shutting down";
  const v1::ClusterMap map = view_->Current();
  const v1::NodeInfo* self = FindNode(map, config_.node_id);
  if (self == nullptr) return "not in the cluster map yet (membership not joined)";
  if (self->state() != v1::NODE_UP) return "the cluster map does not have this node up";
  return "";
}

}  // namespace strata
