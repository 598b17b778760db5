// PushPool: many tasks on few threads, wakes coalesce, a task never steps twice at once,
// timers wake it, Stop runs no more steps.
#include "kinesis/push_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace icestream::kinesis {
namespace {

class Counter : public PushPool::Task {
 public:
  void Step() override {
    int now = ++running;
    max_running = std::max(max_running.load(), now);
    ++steps;
    if (hold) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --running;
  }
  std::atomic<int> steps{0}, running{0}, max_running{0};
  bool hold = false;
};

bool WaitFor(const std::function<bool()>& f) {
  for (int i = 0; i < 2000 && !f(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return f();
}

TEST(PushPool, ThousandTasksOnTwoThreads) {
  PushPool pool(2);
  std::vector<std::shared_ptr<Counter>> tasks;
  for (int i = 0; i < 1000; ++i) tasks.push_back(std::make_shared<Counter>());
  for (auto& t : tasks) pool.Wake(t);
  ASSERT_TRUE(WaitFor([&] {
    for (auto& t : tasks) {
      if (t->steps.load() == 0) return false;
    }
    return true;
  }));
  EXPECT_EQ(pool.threads(), 2u);
}

TEST(PushPool, WakesWhileQueuedCoalesceAndStepsNeverOverlap) {
  PushPool pool(4);
  auto t = std::make_shared<Counter>();
  t->hold = true;
  for (int i = 0; i < 200; ++i) pool.Wake(t);
  ASSERT_TRUE(WaitFor([&] { return t->steps.load() >= 1 && t->running.load() == 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_LE(t->steps.load(), 3);  // woken 200 times while queued or running: 1-2 steps
  EXPECT_EQ(t->max_running.load(), 1);
}

TEST(PushPool, TimersWakeTasksAndStopEndsSteps) {
  PushPool pool(1);
  auto t = std::make_shared<Counter>();
  pool.WakeAt(t, PushPool::Clock::now() + std::chrono::milliseconds(30));
  pool.WakeAt(t, PushPool::Clock::now() + std::chrono::seconds(60));  // later: no new entry
  EXPECT_EQ(t->steps.load(), 0);
  ASSERT_TRUE(WaitFor([&] { return t->steps.load() == 1; }));
  pool.Stop();
  pool.Wake(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(t->steps.load(), 1);
}

}  // namespace
}  // namespace icestream::kinesis
