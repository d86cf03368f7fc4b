#include "plan/epoch_plan.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "common/checksum.h"
#include "common/mutex.h"
#include "plan/shuffle_sampler.h"
#include "plan/stratified_sampler.h"

namespace strata {

namespace {

// Protobuf maps serialise in arbitrary order unless asked to be deterministic.
std::string DeterministicBytes(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream raw(&out);
  google::protobuf::io::CodedOutputStream coded(&raw);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

}  // namespace

Result<std::unique_ptr<Sampler>> Sampler::Create(const DatasetShape& shape, const PlanSpec& spec) {
  if (spec.global_batch == 0) return Status::InvalidArgument("batch size must be at least 1");
  if (spec.global_batch > kMaxGlobalBatch) {
    return Status::InvalidArgument("global batch " + std::to_string(spec.global_batch) + " exceeds the limit of " +
                                   std::to_string(kMaxGlobalBatch));
  }
  if (shape.num_samples == 0) {
    return Status::FailedPrecondition("dataset " + shape.name + "@" + std::to_string(shape.version) +
                                      " has no samples");
  }
  switch (spec.sampler.kind()) {
    case v1::SamplerSpec::SHUFFLE:
      if (!spec.sampler.weights().empty() || spec.sampler.weight_power() != 0 || spec.sampler.epoch_samples() != 0 ||
          !spec.sampler.min_per_batch().empty()) {
        return Status::InvalidArgument(
            "weights, weight_power, epoch_samples and min_per_batch need the stratified or weighted sampler");
      }
      return std::unique_ptr<Sampler>(std::make_unique<ShuffleSampler>(shape, spec));
    case v1::SamplerSpec::STRATIFIED:
    case v1::SamplerSpec::WEIGHTED: {
      auto sampler = StratifiedSampler::Create(shape, spec);
      if (!sampler.ok()) return sampler.status();
      return std::unique_ptr<Sampler>(std::move(sampler).value());
    }
    default:
      return Status::Unimplemented("sampler '" + v1::SamplerSpec::Kind_Name(spec.sampler.kind()) +
                                   "' is not available in this build");
  }
}

Result<std::shared_ptr<const Sampler>> SamplerCache::GetOrCreate(const DatasetShape& shape, const PlanSpec& spec) {
  const bool keep = spec.sampler.kind() != v1::SamplerSpec::SHUFFLE;
  const uint64_t hash = PlanHash(shape, spec);
  if (keep) {
    MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->plan_hash == hash && it->seed == spec.seed && it->epoch == spec.epoch &&
          it->members == shape.members.get()) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().sampler;
      }
    }
  }
  // Built outside the lock: a stratified sampler maps no files but may take a while on huge shapes.
  auto created = Sampler::Create(shape, spec);
  if (!created.ok()) return created.status();
  std::shared_ptr<const Sampler> sampler(std::move(created).value());
  if (keep) {
    MutexLock lock(&mu_);
    entries_.push_front({hash, spec.seed, spec.epoch, shape.members.get(), sampler});
    if (entries_.size() > capacity_) entries_.pop_back();
  }
  return sampler;
}

uint64_t PlanHash(const DatasetShape& shape, const PlanSpec& spec) {
  std::string id = "strata.plan.v1|" + shape.name + "@" + std::to_string(shape.version) + "|" +
                   std::to_string(spec.global_batch) + "|" + std::to_string(static_cast<int>(spec.remainder)) + "|";
  id += DeterministicBytes(spec.sampler);
  // 0 means "no plan expected" in a resume request (CheckResumedPlan), so a
  // plan never hashes to it.
  const uint64_t hash = Hash64(id, 0);
  return hash == 0 ? 1 : hash;
}

Result<EpochPlan> EpochPlan::Create(const DatasetShape& shape, const v1::SamplerSpec& sampler, uint64_t seed,
                                    uint64_t epoch, uint32_t batch_size, uint32_t world, v1::Remainder remainder,
                                    SamplerCache* cache) {
  if (batch_size == 0) return Status::InvalidArgument("batch size must be at least 1");
  if (world == 0) return Status::InvalidArgument("world size must be at least 1");
  PlanSpec spec;
  spec.sampler = sampler;
  spec.seed = seed;
  spec.epoch = epoch;
  spec.global_batch = uint64_t{batch_size} * world;
  spec.remainder = remainder;
  std::shared_ptr<const Sampler> sampler_ptr;
  if (cache != nullptr) {
    auto shared = cache->GetOrCreate(shape, spec);
    if (!shared.ok()) return shared.status();
    sampler_ptr = std::move(shared).value();
  } else {
    auto own = Sampler::Create(shape, spec);
    if (!own.ok()) return own.status();
    sampler_ptr = std::move(own).value();
  }
  if (sampler_ptr->num_steps() == 0) {
    // The weighted sampler's epoch may be set apart from the dataset's size.
    const bool own_size = sampler.kind() == v1::SamplerSpec::WEIGHTED && sampler.epoch_samples() != 0;
    const std::string too_small = own_size
                                      ? "the weighted sampler's epoch has " + std::to_string(sampler.epoch_samples())
                                      : "dataset " + shape.name + "@" + std::to_string(shape.version) + " has " +
                                            std::to_string(shape.num_samples);
    return Status::InvalidArgument("the epoch is empty: " + too_small + " samples, fewer than one global batch of " +
                                   std::to_string(spec.global_batch) + ", and the remainder policy drops it");
  }
  return EpochPlan(std::move(sampler_ptr), batch_size, world, PlanHash(shape, spec));
}

uint64_t EpochPlan::RankBatchSize(uint64_t step, uint32_t rank) const {
  const uint64_t g = sampler_->batch_size(step);
  return g > rank ? (g - rank + world_ - 1) / world_ : 0;
}

void EpochPlan::RankBatch(uint64_t step, uint32_t rank, std::vector<uint64_t>* ids) const {
  ids->clear();
  sampler_->Select(step, rank, world_, ids);
}

}  // namespace strata
