// Joining and leaving a scale-out pool.
#include "scaleout/pool.h"

#include <spdlog/spdlog.h>

#include "scaleout/pg_catalog_store.h"
#include "scaleout/pg_delivery_store.h"
#include "scaleout/pg_staging_store.h"
#include "scaleout/schema.h"

namespace icestream::scaleout {

Status CheckLeaseTimings(const LeaseOptions& o) {
  if (o.lease_ms <= 0 || o.renew_ms <= 0 || o.take_ms <= 0) {
    return InvalidArgument("scaleout.lease_ms, renew_ms and take_ms must be positive");
  }
  if (o.lease_ms < 2 * o.renew_ms) {
    return InvalidArgument(
        "scaleout.lease_ms must be at least twice scaleout.renew_ms (a lease must survive one "
        "missed renewal)");
  }
  return Status::OK();
}

Result<std::unique_ptr<Pool>> Pool::Join(PoolOptions options) {
  if (options.conninfo.empty()) return InvalidArgument("--pg needs a PostgreSQL conninfo or URI");
  RETURN_IF_ERROR(CheckLeaseTimings(options.leases));
  std::unique_ptr<Pool> p(new Pool());
  pg::PgPoolOptions po;
  po.conninfo = options.conninfo;
  po.max_connections = options.max_connections;
  ASSIGN_OR_RETURN(p->pg_, pg::PgPool::Open(po));
  RETURN_IF_ERROR(PgCatalogStore::EnsureSchema(p->pg_.get()));
  RETURN_IF_ERROR(EnsureDeliverySchema(p->pg_.get()));
  if (options.observe) {
    p->leases_ = LeaseManager::Observe(p->pg_.get());
  } else {
    ASSIGN_OR_RETURN(p->leases_, LeaseManager::Start(p->pg_.get(), options.leases));
    p->staged_ = std::make_unique<NotifyListener>(options.conninfo, PgStagingStore::kStagedChannel);
    p->channels_ =
        std::make_unique<NotifyListener>(options.conninfo, PgDeliveryStore::kChannelsChanged);
  }
  return p;
}

Pool::~Pool() { Leave(false); }

void Pool::Leave(bool handoff) {
  if (leases_) leases_->Stop(handoff);
}

std::unique_ptr<delivery::DeliveryStore> Pool::MakeDeliveryStore() const {
  return std::make_unique<PgDeliveryStore>(pg_.get(), leases_.get(), channels_.get());
}

std::shared_ptr<delivery::table::StagingStore> Pool::MakeStagingStore() const {
  return std::make_shared<PgStagingStore>(pg_.get(), leases_.get(), staged_.get());
}

Result<std::shared_ptr<iceberg::CatalogStore>> Pool::CatalogRows(
    const std::string& warehouse) const {
  return std::shared_ptr<iceberg::CatalogStore>(
      std::make_shared<PgCatalogStore>(pg_.get(), warehouse));
}

const iceberg::CommitFence* Pool::FenceFor(const std::string& channel_id) {
  std::lock_guard lock(mu_);
  auto& f = fences_[channel_id];
  if (!f) f = std::make_unique<PgLeaseFence>(leases_.get(), channel_id);
  return f.get();
}

}  // namespace icestream::scaleout
