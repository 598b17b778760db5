// Watchers: callbacks that mean "look now", registered until their handle is released.
// NotifyListener (a PostgreSQL notification's payload) and LeaseManager (units taken) hand
// their events to these.
//
// Thread-safety: Add, Call and the handles' release from any thread. Watchers run one at a
// time, under the set's lock, and must be quick (set a flag, wake a thread); once a handle
// is released its watcher is not running and is never called again. The set must outlive
// the handles.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace icestream {

class Watchers {
 public:
  // Calls `fn` on every Call of `key` (and every CallAll) until the handle is released.
  std::shared_ptr<void> Add(std::string key, std::function<void()> fn);
  void Call(const std::string& key);
  void CallAll();

 private:
  std::mutex mu_;  // held while a watcher runs
  uint64_t next_id_ = 0;
  std::multimap<std::string, std::pair<uint64_t, std::function<void()>>> watchers_;
};

}  // namespace icestream
