// PostgreSQL notifications handed to watchers.
#include "scaleout/notify_listener.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "pg/client.h"

namespace icestream::scaleout {

NotifyListener::NotifyListener(std::string conninfo, std::string channel)
    : conninfo_(std::move(conninfo)), channel_(std::move(channel)) {
  thread_ = std::thread([this] { Loop(); });
}

NotifyListener::~NotifyListener() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool NotifyListener::Pause(int64_t ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
  return !stopping_;
}

void NotifyListener::Loop() {
  int64_t pause_ms = 100;
  auto stopping = [this] {
    std::lock_guard lock(mu_);
    return stopping_;
  };
  while (!stopping()) {
    auto conn = pg::PgConnection::Connect(conninfo_, pg::After(std::chrono::seconds(2)));
    Status st = conn.ok()
                    ? (*conn)->ExecScript("LISTEN " + channel_, pg::After(std::chrono::seconds(2)))
                    : conn.status();
    if (!st.ok()) {
      spdlog::debug("scale-out: listening for {}: {} (again in {} ms)", channel_, st.ToString(),
                    pause_ms);
      if (!Pause(pause_ms)) return;
      pause_ms = std::min<int64_t>(pause_ms * 2, 5000);
      continue;
    }
    pause_ms = 100;
    watchers_.CallAll();  // whatever was sent while nobody listened
    connects_.fetch_add(1);
    // Short waits, so a stop is seen within a quarter second.
    while (!stopping()) {
      auto got = (*conn)->Notifications(pg::After(std::chrono::milliseconds(250)));
      if (!got.ok()) {
        spdlog::debug("scale-out: listening for {}: {}", channel_, got.status().ToString());
        break;
      }
      for (const auto& n : *got) watchers_.Call(n.payload);
    }
  }
}

}  // namespace icestream::scaleout
