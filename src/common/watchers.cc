// Watchers registered until their handle is released.
#include "common/watchers.h"

namespace icestream {

std::shared_ptr<void> Watchers::Add(std::string key, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  const uint64_t id = ++next_id_;
  watchers_.emplace(key, std::make_pair(id, std::move(fn)));
  // The handle (never null; it points at the set) removes the watcher when released, under
  // the lock watchers run under.
  return std::shared_ptr<void>(this, [this, key = std::move(key), id](void*) {
    std::lock_guard released(mu_);
    auto [lo, hi] = watchers_.equal_range(key);
    for (auto it = lo; it != hi; ++it) {
      if (it->second.first == id) {
        watchers_.erase(it);
        break;
      }
    }
  });
}

void Watchers::Call(const std::string& key) {
  std::lock_guard lock(mu_);
  auto [lo, hi] = watchers_.equal_range(key);
  for (auto it = lo; it != hi; ++it) it->second.second();
}

void Watchers::CallAll() {
  std::lock_guard lock(mu_);
  for (auto& [key, w] : watchers_) w.second();
}

}  // namespace icestream
