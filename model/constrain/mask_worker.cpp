#include "model/constrain/mask_worker.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace bitnet::model::constrain {

bool mask_worker::job::wait_until(clock::time_point deadline) {
    std::unique_lock lk(mu_);
    return cv_.wait_until(lk, deadline, [&] { return result_.has_value(); });
}

std::optional<mask_worker::clock::time_point> mask_worker::job::started() const {
    std::lock_guard lk(mu_);
    return started_;
}

mask_worker::~mask_worker() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        stop_.cancelled.store(true);
    }
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

std::shared_ptr<mask_worker::job> mask_worker::submit(std::shared_ptr<const compiled_constraint> c,
                                                      const byte_matcher& m) {
    // The constraint's address tells schemas apart while the job holds it.
    std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(c.get())) + ':';
    key += c->mask_key(m);
    std::lock_guard lk(mu_);
    if (auto it = in_flight_.find(key); it != in_flight_.end())
        return it->second;
    auto j = std::make_shared<job>();
    j->key_ = key;
    j->constraint_ = std::move(c);
    j->state_ = m;
    j->queued_ = clock::now();
    in_flight_.emplace(std::move(key), j);
    queue_.push_back(j);
    if (!thread_.joinable())
        thread_ = std::thread([this] { run(); });
    cv_.notify_one();
    return j;
}

std::size_t mask_worker::pending() const {
    std::lock_guard lk(mu_);
    return in_flight_.size();
}

void mask_worker::run() {
    // Below the kernels' threads: a mask waits for a core the forward pass does not use, never
    // the other way round (Linux: a thread's own nice value).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    for (;;) {
        std::shared_ptr<job> j;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_)
                return;
            j = std::move(queue_.front());
            queue_.pop_front();
        }
        {
            std::lock_guard lk(j->mu_);
            j->started_ = clock::now();
        }
        auto mask = j->constraint_->mask_for(j->state_, &stop_);
        {
            std::lock_guard lk(j->mu_);
            j->result_.emplace(std::move(mask));
        }
        j->cv_.notify_all();
        std::lock_guard lk(mu_);
        in_flight_.erase(j->key_);
    }
}

} // namespace bitnet::model::constrain
