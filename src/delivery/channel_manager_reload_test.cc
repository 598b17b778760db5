// ChannelManager's reload in a scale-out pool (the channel list read again from the shared
// store every reload_ms) over a real stream store, meta.db and local buckets: a channel
// created in this process while a reload is reading the list is not in that list, and it
// must not be taken for one another process deleted (it used to vanish until the next
// reload: DescribeChannel answered ResourceNotFoundException right after CreateChannel);
// a channel another process created retries its activation as one made here does; a
// channel another process resumes while a batch of this one is in flight is resumed here
// once that batch is done.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "common/fs.h"
#include "common/testing/status_assertions.h"
#include "delivery/channel_manager_test_base.h"
#include "delivery/sqlite_delivery_store.h"
#include "stream/hash_key.h"

namespace icestream::delivery {
namespace {

// meta.db's store, with a hook that runs once between reading the channel list and
// returning it (where another process's or this one's change lands in a real pool).
class HookedStore final : public DeliveryStore {
 public:
  explicit HookedStore(std::unique_ptr<DeliveryStore> inner) : inner_(std::move(inner)) {}
  void OnNextLoad(std::function<void()> hook) {
    std::lock_guard lock(mu_);
    hook_ = std::move(hook);
  }
  Result<std::vector<ChannelConfig>> LoadChannels() override {
    auto list = inner_->LoadChannels();
    std::function<void()> hook;
    {
      std::lock_guard lock(mu_);
      hook.swap(hook_);
    }
    if (hook) hook();
    return list;
  }
  Status SaveChannel(const ChannelConfig& c) override { return inner_->SaveChannel(c); }
  Status RemoveChannel(const std::string& id) override { return inner_->RemoveChannel(id); }
  Result<std::map<std::string, Position>> Checkpoints(const std::string& id) override {
    return inner_->Checkpoints(id);
  }
  void OnActivate(std::function<void()> hook) {
    std::lock_guard lock(mu_);
    activate_hook_ = std::move(hook);
  }
  int activations() {
    std::lock_guard lock(mu_);
    return activations_;
  }
  Status Activate(const ChannelConfig& c, const std::map<std::string, Position>& cps) override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mu_);
      hook.swap(activate_hook_);
      ++activations_;
    }
    if (hook) hook();
    return inner_->Activate(c, cps);
  }
  Result<std::map<std::string, BatchPlan>> Plans(const std::string& id) override {
    return inner_->Plans(id);
  }
  Status SavePlans(const std::string& id, const std::map<std::string, BatchPlan>& p) override {
    return inner_->SavePlans(id, p);
  }
  // Runs once, in the next batch's checkpoint write (the batch is in flight until it
  // returns).
  void OnCommit(std::function<void()> hook) {
    std::lock_guard lock(mu_);
    commit_hook_ = std::move(hook);
  }
  Status Commit(const std::string& id, const std::map<std::string, Position>& cps,
                const std::set<std::string>& finished) override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mu_);
      if (!cps.empty()) hook.swap(commit_hook_);
    }
    if (hook) hook();
    return inner_->Commit(id, cps, finished);
  }
  Result<std::set<std::string>> FinishedShards(const std::string& id) override {
    return inner_->FinishedShards(id);
  }
  Result<nlohmann::json> LoadSinkState(const std::string& id) override {
    return inner_->LoadSinkState(id);
  }
  Status SaveSinkState(const std::string& id, const nlohmann::json& doc) override {
    return inner_->SaveSinkState(id, doc);
  }
  Result<std::vector<nlohmann::json>> LoadRedrives(const std::string& id) override {
    return inner_->LoadRedrives(id);
  }
  Status SaveRedrive(const std::string& id, const std::string& redrive_id, int64_t created_ms,
                     const nlohmann::json& doc) override {
    return inner_->SaveRedrive(id, redrive_id, created_ms, doc);
  }

 private:
  std::unique_ptr<DeliveryStore> inner_;
  std::mutex mu_;
  std::function<void()> hook_;
  std::function<void()> activate_hook_;
  std::function<void()> commit_hook_;
  int activations_ = 0;
};

// A pool of one: this process holds every unit (what is tested is the manager's list).
class AloneInThePool final : public Coordinator {
 public:
  uint64_t HeldEpoch(const std::string&, const std::string&) const override { return 1; }
  void Offer(const std::string&, const std::vector<std::string>&) override {}
  void Forget(const std::string&) override {}
  std::string owner() const override { return "test:1:alone"; }
  Result<std::map<std::string, UnitOwner>> Owners(const std::string&) const override {
    return std::map<std::string, UnitOwner>{};
  }
};

// meta.db with the stream "orders", its local source and a pool of one; the managers a
// test opens over them share the store, as the processes of a pool share theirs.
class ChannelManagerReload : public OrdersStreamTest {
 protected:
  Result<std::unique_ptr<ChannelManager>> OpenManager(std::unique_ptr<DeliveryStore> store,
                                                      int64_t reload_ms) {
    ChannelManagerOptions o;
    o.coordinator = &pool_;
    o.reload_ms = reload_ms;
    return OrdersStreamTest::OpenManager(o, std::move(store));
  }

  AloneInThePool pool_;
};

TEST_F(ChannelManagerReload, AChannelCreatedWhileTheListIsReadStays) {
  ASSERT_OK_AND_ASSIGN(auto inner, SqliteDeliveryStore::Open(db_.get()));
  auto hooked = std::make_unique<HookedStore>(std::move(inner));
  HookedStore* store = hooked.get();
  // One reload at a time, well apart.
  ASSERT_OK_AND_ASSIGN(auto channels, OpenManager(std::move(hooked), 2000));

  // While the next reload reads the list, a channel is created here.
  std::promise<Result<ChannelConfig>> created;
  store->OnNextLoad([&] {
    ChannelConfig c;
    c.name = "late";
    c.stream_name = "orders";
    c.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::out"};
    created.set_value(channels->Create(std::move(c)));
  });
  auto f = created.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "no reload ran";
  ASSERT_OK_AND_ASSIGN(ChannelConfig c, f.get());
  // The reload has finished with a list that lacks the channel; it is still there.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_OK(channels->Describe(c.arn).status());
  channels->Stop();
}

// A channel another process of the pool created is taken from the store by a reload. A
// destination it cannot reach yet (its bucket cannot be made yet) is retried for the activation
// timeout counted from the channel's creation, as for a channel made here: it used to be
// FAILED at its first failed attempt ("could not reach its destination for 600 s") — the
// start of its activation was left at 0, the epoch.
TEST_F(ChannelManagerReload, AChannelTakenFromTheStoreRetriesItsActivation) {
  ASSERT_OK_AND_ASSIGN(auto store, SqliteDeliveryStore::Open(db_.get()));
  ASSERT_OK_AND_ASSIGN(auto channels, OpenManager(std::move(store), 200));
  std::filesystem::create_directories(dir_.Path("buckets"));
  ASSERT_OK(fs::WriteFileAtomic(dir_.Path("buckets/later"), "not a bucket"));
  // The other process: creates the channel, stopped so that it never activates it.
  ChannelConfig c;
  {
    ASSERT_OK_AND_ASSIGN(auto theirs_store, SqliteDeliveryStore::Open(db_.get()));
    ASSERT_OK_AND_ASSIGN(auto theirs, OpenManager(std::move(theirs_store), 200));
    theirs->Stop();
    ChannelConfig req;
    req.name = "elsewhere";
    req.stream_name = "orders";
    req.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::later"};
    ASSERT_OK_AND_ASSIGN(c, theirs->Create(std::move(req)));
  }
  // Taken by a reload, it tries to activate: its bucket cannot be made (a file holds the
  // bucket's place under the local buckets' root).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_OK_AND_ASSIGN(ChannelConfig now, channels->Describe(c.arn));
  EXPECT_EQ(now.status, ChannelStatus::kCreating) << now.status_reason;
  std::filesystem::remove(dir_.Path("buckets/later"));
  for (int i = 0; i < 100 && now.status == ChannelStatus::kCreating; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_OK_AND_ASSIGN(now, channels->Describe(c.arn));
  }
  EXPECT_EQ(now.status, ChannelStatus::kActive) << now.status_reason;
  channels->Stop();
}

// A channel that becomes ACTIVE here while a reload reads the list: the row read says
// CREATING. Applied over the channel, it used to turn it back to CREATING, and the channel
// was activated a second time, its checkpoints reset to the starting position (records
// delivered again). Changes made here after the list was read stay.
TEST_F(ChannelManagerReload, AnActivationWhileTheListIsReadIsNotUndone) {
  ASSERT_OK_AND_ASSIGN(auto inner, SqliteDeliveryStore::Open(db_.get()));
  auto hooked = std::make_unique<HookedStore>(std::move(inner));
  HookedStore* store = hooked.get();
  // A reload on every tick: the next one starts while the activation below waits.
  ASSERT_OK_AND_ASSIGN(auto channels, OpenManager(std::move(hooked), 1));
  std::promise<void> list_read;
  auto list_read_f = list_read.get_future().share();
  std::promise<ChannelStatus> seen;
  auto seen_f = seen.get_future();
  std::string arn;
  std::mutex arn_mu;
  // The activation's write waits until a reload has read the list (the channel CREATING
  // in it); that reload hands its list over only once the channel is ACTIVE here.
  store->OnActivate([&, list_read_f] {
    store->OnNextLoad([&] {
      list_read.set_value();
      ChannelStatus st = ChannelStatus::kCreating;
      for (int i = 0; i < 100 && st != ChannelStatus::kActive; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::lock_guard lock(arn_mu);
        auto d = channels->Describe(arn);
        if (d.ok()) st = d->status;
      }
      seen.set_value(st);
    });
    list_read_f.wait_for(std::chrono::seconds(10));
  });
  ChannelConfig req;
  req.name = "racing";
  req.stream_name = "orders";
  req.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::out"};
  {
    std::lock_guard lock(arn_mu);
    ASSERT_OK_AND_ASSIGN(ChannelConfig c, channels->Create(std::move(req)));
    arn = c.arn;
  }
  ASSERT_EQ(list_read_f.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "no reload read the list while the activation waited";
  ASSERT_EQ(seen_f.wait_for(std::chrono::seconds(15)), std::future_status::ready)
      << "the reload did not finish";
  ASSERT_EQ(seen_f.get(), ChannelStatus::kActive);
  // Many reloads later: still ACTIVE, activated once.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_OK_AND_ASSIGN(ChannelConfig now, channels->Describe(arn));
  EXPECT_EQ(now.status, ChannelStatus::kActive);
  EXPECT_EQ(store->activations(), 1);
  channels->Stop();
}

// A channel that another process of the pool fails and then resumes while this process
// still has a batch of it in flight (its runner stopped at the failure): here it used to
// take the new status at once, but the fresh runner waited for the batch, and once the
// batch was done no later reload saw a change again. The channel stayed ACTIVE here with
// no runner, and delivered nothing more.
TEST_F(ChannelManagerReload, AChannelResumedElsewhereDuringABatchDeliversAgain) {
  ASSERT_OK_AND_ASSIGN(auto inner, SqliteDeliveryStore::Open(db_.get()));
  auto hooked = std::make_unique<HookedStore>(std::move(inner));
  HookedStore* store = hooked.get();
  ASSERT_OK_AND_ASSIGN(auto channels, OpenManager(std::move(hooked), 50));
  ASSERT_OK_AND_ASSIGN(auto theirs, SqliteDeliveryStore::Open(db_.get()));  // the other process

  ChannelConfig req;
  req.name = "resumed";
  req.stream_name = "orders";
  req.data_freshness_seconds = 1;
  req.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::out"};
  ASSERT_OK_AND_ASSIGN(ChannelConfig c, channels->Create(std::move(req)));
  auto status = [&] {
    auto d = channels->Describe(c.arn);
    return d.ok() ? d->status : ChannelStatus::kDeleting;
  };
  auto wait_for = [&](ChannelStatus want) {
    for (int i = 0; i < 200 && status() != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return status() == want;
  };
  ASSERT_TRUE(wait_for(ChannelStatus::kActive));

  // The next batch's checkpoint write waits until the test lets it go.
  std::promise<void> in_commit, release;
  std::shared_future<void> released = release.get_future().share();
  store->OnCommit([&in_commit, released] {
    in_commit.set_value();
    released.wait_for(std::chrono::seconds(30));
  });
  auto put = [&](const std::string& key) {
    std::vector<stream::PutItem> items{{key, "{}", stream::PartitionKeyHash(key)}};
    std::promise<stream::PutResult> p;
    EXPECT_OK(streams_->Put("orders", items, [&](stream::PutResult r) { p.set_value(r); }));
    p.get_future().wait();
  };
  put("first");
  ASSERT_EQ(in_commit.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "no batch ran";

  // The other process fails the channel, and resumes it once this one has seen it FAILED.
  ASSERT_OK_AND_ASSIGN(std::vector<ChannelConfig> rows, theirs->LoadChannels());
  ASSERT_EQ(rows.size(), 1u);
  ChannelConfig row = rows[0];
  row.status = ChannelStatus::kFailed;
  row.status_reason = "failed elsewhere";
  ASSERT_OK(theirs->SaveChannel(row));
  EXPECT_TRUE(wait_for(ChannelStatus::kFailed));
  row.status = ChannelStatus::kActive;
  row.status_reason.clear();
  ASSERT_OK(theirs->SaveChannel(row));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // reloads while in flight
  release.set_value();

  // Resumed here: a record put now is delivered (an object in the bucket).
  ASSERT_TRUE(wait_for(ChannelStatus::kActive));
  auto objects = [&] {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir_.Path("buckets/out"), ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) ++n;
    }
    return n;
  };
  const size_t before = objects();
  put("second");
  size_t after = before;
  for (int i = 0; i < 200 && after == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    after = objects();
  }
  EXPECT_GT(after, before) << "the resumed channel delivered nothing more here";
  channels->Stop();
}

}  // namespace
}  // namespace icestream::delivery
