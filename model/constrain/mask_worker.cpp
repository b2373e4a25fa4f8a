#include "model/constrain/mask_worker.hpp"

#include <algorithm>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace bitnet::model::constrain {

bool mask_worker::job::wait_until(clock::time_point deadline) {
    std::unique_lock lk(mu_);
    return cv_.wait_until(lk, deadline, [&] { return result_.has_value(); });
}

std::optional<mask_worker::clock::time_point> mask_worker::job::running_since() const {
    std::lock_guard lk(mu_);
    return running_since_;
}

std::optional<mask_worker::clock::time_point> mask_worker::job::done_at() const {
    std::lock_guard lk(mu_);
    return done_at_;
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
                                                      const byte_matcher& m,
                                                      const std::string& tenant) {
    // The constraint's address tells schemas apart while the job holds it.
    std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(c.get())) + ':';
    key += c->mask_key(m);
    std::lock_guard lk(mu_);
    if (auto it = in_flight_.find(key); it != in_flight_.end()) {
        if (auto j = it->second.lock()) {
            // Another tenant's job for the same state: it also waits in this tenant's queue, so
            // this tenant never waits for the other's turns to reach it.
            if (std::find(j->tenants_.begin(), j->tenants_.end(), tenant) == j->tenants_.end())
                enqueue(j, tenant);
            cv_.notify_one();
            return j;
        }
        in_flight_.erase(it); // let go of: a new job for the state
    }
    auto j = std::make_shared<job>();
    j->key_ = key;
    j->constraint_ = std::move(c);
    j->state_ = m;
    j->queued_ = clock::now();
    in_flight_.emplace(std::move(key), j);
    enqueue(j, tenant);
    if (!thread_.joinable())
        thread_ = std::thread([this] { run(); });
    cv_.notify_one();
    return j;
}

void mask_worker::enqueue(const std::shared_ptr<job>& j, const std::string& tenant) {
    j->tenants_.push_back(tenant);
    auto& q = queues_[tenant];
    // An empty queue is a tenant neither in line nor in its turn (a turn's tenant has its job
    // in its queue until the job is done).
    if (q.empty())
        turns_.push_back(tenant);
    q.push_back({j, j->key_});
}

std::size_t mask_worker::pending() const {
    std::lock_guard lk(mu_);
    return in_flight_.size();
}

bool mask_worker::run_slice(job& j) {
    {
        std::lock_guard lk(j.mu_);
        j.running_since_ = clock::now();
    }
    auto mask = j.constraint_->mask_slice(j.state_, j.walk_, &stop_, slice_ns, max_mask_ms_);
    if (j.walk_)
        j.cpu_ns_.store(j.walk_->cpu_ns());
    const bool done = !mask || *mask;
    {
        std::lock_guard lk(j.mu_);
        j.running_since_.reset();
        if (done) {
            j.result_.emplace(std::move(mask));
            j.done_at_ = clock::now();
        }
    }
    if (done) {
        j.walk_.reset();
        j.cv_.notify_all();
    }
    return done;
}

std::shared_ptr<mask_worker::job> mask_worker::first_wanted(const std::string& tenant) {
    auto& q = queues_.at(tenant);
    while (!q.empty()) {
        if (auto j = q.front().j.lock())
            return j;
        // Every sequence that asked for it is gone: its walk would serve nobody.
        if (auto it = in_flight_.find(q.front().key);
            it != in_flight_.end() && it->second.expired())
            in_flight_.erase(it);
        q.pop_front();
    }
    return nullptr;
}

void mask_worker::forget(const std::shared_ptr<job>& j, const std::string& serving) {
    if (auto it = in_flight_.find(j->key_); it != in_flight_.end() && it->second.lock() == j)
        in_flight_.erase(it);
    for (const auto& t : j->tenants_) {
        auto q = queues_.find(t);
        if (q == queues_.end())
            continue;
        std::erase_if(q->second, [&](const entry& e) { return e.j.lock() == j; });
        if (q->second.empty() && t != serving) {
            queues_.erase(q);
            std::erase(turns_, t);
        }
    }
}

void mask_worker::end_turn(const std::string& serving) {
    if (auto q = queues_.find(serving); q != queues_.end()) {
        if (q->second.empty())
            queues_.erase(q);
        else
            turns_.push_back(serving);
    }
}

void mask_worker::run() {
    // Below the kernels' threads: a mask waits for a core the forward pass does not use, never
    // the other way round (Linux: a thread's own nice value).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    for (;;) {
        std::shared_ptr<job> j;
        std::string tenant;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return stopping_ || !turns_.empty(); });
            if (stopping_)
                return;
            tenant = std::move(turns_.front());
            turns_.pop_front();
            j = first_wanted(tenant);
            if (!j) {
                queues_.erase(tenant);
                continue;
            }
        }
        const bool done = run_slice(*j);
        std::lock_guard lk(mu_);
        if (done)
            forget(j, tenant);
        end_turn(tenant);
    }
}

} // namespace bitnet::model::constrain
