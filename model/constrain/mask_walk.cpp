// The trie walk that computes a token mask (mask_walk.hpp): depth first over the vocabulary's
// trie, carrying the matcher state down each edge and cutting every branch no configuration
// survives, from an explicit stack of frames rather than the call stack, so a walk can stop
// between two edges when its slice is over and go on from there later. Every edge is checked
// against the budget before it is taken, in the same order as a walk run whole, so a mask and
// what it spends do not depend on how it was sliced.
#include "model/constrain/mask_walk.hpp"

#include "model/constrain/mask_cache.hpp"

#include <time.h>

namespace bitnet::model::constrain {

namespace {

std::int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// `a + b` without passing the clock's end (an unbudgeted walk's deadlines are "never").
std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    return b > std::numeric_limits<std::int64_t>::max() - a
               ? std::numeric_limits<std::int64_t>::max()
               : a + b;
}

error too_ambiguous() {
    return error{errc::invalid_argument,
                 "structured output: the schema is ambiguous here, with more than " +
                     std::to_string(limits::max_live_configs) +
                     " alternatives open at once (limit max_live_configs)",
                 "max_live_configs"};
}

void set_tokens(token_mask& mask, std::span<const std::int32_t> ids) {
    for (auto id : ids)
        mask[static_cast<std::size_t>(id) >> 6] |= 1ULL << (id & 63);
}

} // namespace

bool mask_walk::spent() {
    if (stop_)
        return true;
    if (work_ > max_work_)
        stop_ = error{errc::invalid_argument,
                      "structured output: the allowed tokens of this state take more than " +
                          std::to_string(limits::max_mask_steps) +
                          " matcher steps to find (limit max_mask_steps)",
                      "max_mask_steps"};
    else if ((++calls_ & 255) == 0) {
        // CPU time of the computing thread: a mask worker below the kernels' priority may wait
        // for a core, and that is no work of the mask's.
        if (cancel_ && cancel_->cancelled.load(std::memory_order_relaxed))
            stop_ = error{errc::cancelled, "structured output: the mask was cancelled"};
        else if (const auto now = thread_cpu_ns(); now > deadline_ns_)
            stop_ = error{errc::invalid_argument,
                          "structured output: the allowed tokens of this state took more than " +
                              std::to_string(max_cpu_ns_ / 1'000'000) +
                              " ms to find (limit max_mask_ms)",
                          "max_mask_ms"};
        else if (now > slice_end_ns_) {
            paused_ = true;
            return true;
        }
    }
    return stop_.has_value();
}

void compiled_constraint::set_eog(const byte_matcher& m, token_mask& mask) const {
    if (!m.complete(g_))
        return;
    for (auto id : vocab_->eog)
        if (id >= 0 && id < vocab_->n_vocab)
            mask[static_cast<std::size_t>(id) >> 6] |= 1ULL << (id & 63);
}

void compiled_constraint::start_walk(mask_walk& w, const byte_matcher& m, bool budgeted,
                                     const cancel_token* cancel, std::int64_t max_ms) const {
    w.root_ = m;
    w.mask_.assign((static_cast<std::size_t>(vocab_->n_vocab) + 63) / 64, 0);
    if (budgeted) {
        w.max_work_ = limits::max_mask_steps;
        w.max_cpu_ns_ = max_ms * 1'000'000;
    }
    w.cancel_ = cancel;
    if (budgeted && m.overflowed()) {
        w.stop_ = too_ambiguous();
        return;
    }
    if (m.dead())
        return;
    // A trie node's depth is the length of the pieces through it, so the walk goes at most
    // max_piece_bytes deep: the pool is sized once, and no reference into it moves.
    w.pool_.resize(std::size_t{vocab_->max_piece_bytes} + 1);
    w.frames_.reserve(std::size_t{vocab_->max_piece_bytes} + 2);
    set_tokens(w.mask_, vocab_->tokens(0));
    w.frames_.push_back({0, 0});
}

bool compiled_constraint::run_walk(mask_walk& w, std::int64_t slice_ns) const {
    if (w.stop_)
        return true;
    const auto t0 = thread_cpu_ns();
    w.deadline_ns_ = saturating_add(t0, w.max_cpu_ns_ - w.cpu_ns_);
    w.slice_end_ns_ =
        slice_ns > 0 ? saturating_add(t0, slice_ns) : std::numeric_limits<std::int64_t>::max();
    w.paused_ = false;
    auto& frames = w.frames_;
    while (!frames.empty()) {
        const auto depth = frames.size() - 1;
        const auto edges = vocab_->next(frames.back().node);
        if (frames.back().edge == edges.size()) {
            frames.pop_back();
            continue;
        }
        if (w.spent())
            break;
        const auto [byte, child] = edges[frames.back().edge++];
        byte_matcher& next = w.pool_[depth];
        next = depth == 0 ? w.root_ : w.pool_[depth - 1]; // reuses the last edge's storage
        if (next.feed(g_, byte, &w.work_)) {
            set_tokens(w.mask_, vocab_->tokens(child));
            frames.push_back({child, 0});
        } else if (next.overflowed()) {
            w.stop_ = too_ambiguous();
        }
    }
    w.cpu_ns_ += thread_cpu_ns() - t0;
    if (w.stop_ || w.paused_)
        return w.stop_.has_value();
    set_eog(w.root_, w.mask_);
    return true;
}

token_mask compiled_constraint::mask_by_trie(const byte_matcher& m) const {
    mask_walk w;
    start_walk(w, m, false, nullptr);
    if (run_walk(w, 0) && w.stop_)
        set_eog(m, w.mask_); // what the walk found before a branch overflowed, as it is
    return std::move(w.mask_);
}

result<token_mask> compiled_constraint::mask_within_budget(const byte_matcher& m,
                                                           const cancel_token* cancel) const {
    mask_walk w;
    start_walk(w, m, true, cancel);
    (void)run_walk(w, 0);
    if (w.stop_)
        return *w.stop_;
    return std::move(w.mask_);
}

result<std::shared_ptr<const token_mask>>
compiled_constraint::mask_slice(const byte_matcher& m, std::unique_ptr<mask_walk>& walk,
                                const cancel_token* cancel, std::int64_t slice_ns,
                                std::int64_t max_ms) const {
    auto& cache = mask_cache::shared();
    if (!walk) {
        auto key = mask_key(m);
        if (auto hit = cache.find(id_, key))
            return hit;
        walk = std::make_unique<mask_walk>();
        walk->key_ = std::move(key);
        start_walk(*walk, m, true, cancel, max_ms);
    }
    if (!run_walk(*walk, slice_ns))
        return std::shared_ptr<const token_mask>{};
    if (walk->stop_)
        return *walk->stop_;
    auto shared = std::make_shared<const token_mask>(std::move(walk->mask_));
    ++computed_;
    cache.put(id_, walk->key_, shared);
    return shared;
}

result<std::shared_ptr<const token_mask>>
compiled_constraint::mask_for(const byte_matcher& m, const cancel_token* cancel) const {
    std::unique_ptr<mask_walk> walk;
    return mask_slice(m, walk, cancel, 0);
}

} // namespace bitnet::model::constrain
