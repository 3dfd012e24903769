// A fixed pool of worker threads running queued jobs in FIFO order. Used by the compiler so that
// NVRTC runs on every core while the GPU benchmarks what is already compiled.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ktune {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  // Jobs not started yet are dropped (a packaged task dropped unrun leaves its future a
  // broken_promise error, not a dangling state); those running finish. A tune whose time budget
  // abandoned a pool's worth of compiles ends when they would have started, not after them all.
  ~ThreadPool() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> lk(mu_); // one lock: no worker takes a job between the two
      stopping_ = true;
      dropped.swap(jobs_);
    }
    cv_.notify_all();
    dropped.clear(); // outside the lock: a job's captures may be heavy
    for (auto& t : workers_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  // Drops the jobs not started yet (their packaged tasks' futures become broken_promise errors).
  void drop_queued() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> lk(mu_);
      dropped.swap(jobs_);
    }
    dropped.clear(); // outside the lock: a job's captures may be heavy
  }
  unsigned size() const { return static_cast<unsigned>(workers_.size()); }
  // Jobs running now (started, not returned).
  unsigned running() const {
    std::lock_guard<std::mutex> lk(mu_);
    return running_;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        ++running_;
      }
      job();
      job = nullptr; // its captures go before it counts as done
      std::lock_guard<std::mutex> lk(mu_);
      --running_;
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  unsigned running_ = 0;
  bool stopping_ = false;
};

} // namespace ktune
