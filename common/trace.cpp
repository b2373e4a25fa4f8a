#include "common/trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace bitnet::trace {

namespace {

int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; // W3C: lower-case hex only
}

/// `n` lower-case hex digits at `s` into `out` (big-endian bytes); false on any other character.
bool read_hex(std::string_view s, std::uint8_t* out, std::size_t bytes) noexcept {
    if (s.size() != bytes * 2)
        return false;
    for (std::size_t i = 0; i < bytes; ++i) {
        const int hi = hex_digit(s[2 * i]);
        const int lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return true;
}

void write_hex(const std::uint8_t* in, std::size_t bytes, std::string& out) {
    static constexpr char digits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < bytes; ++i) {
        out.push_back(digits[in[i] >> 4]);
        out.push_back(digits[in[i] & 15]);
    }
}

std::mt19937_64& rng() {
    thread_local std::mt19937_64 g{[] {
        std::random_device rd;
        return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    }()};
    return g;
}

/// The low 8 bytes of a trace id, as OpenTelemetry's ratio sampler reads them: the same trace
/// gets the same decision on every node.
std::uint64_t low_bits(const trace_id& t) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 8; i < 16; ++i)
        v = (v << 8) | t[i];
    return v;
}

} // namespace

bool context::valid() const noexcept {
    bool any = false;
    for (auto b : trace)
        any |= b != 0;
    return any && span != 0;
}

std::optional<context> parse_traceparent(std::string_view h) {
    // version "-" trace-id "-" parent-id "-" flags; later versions may append "-..." fields.
    while (!h.empty() && (h.front() == ' ' || h.front() == '\t'))
        h.remove_prefix(1);
    while (!h.empty() && (h.back() == ' ' || h.back() == '\t'))
        h.remove_suffix(1);
    if (h.size() < 55 || h[2] != '-' || h[35] != '-' || h[52] != '-')
        return std::nullopt;
    std::uint8_t version = 0;
    if (!read_hex(h.substr(0, 2), &version, 1) || version == 0xff)
        return std::nullopt;
    if (version == 0 && h.size() != 55)
        return std::nullopt;
    if (version != 0 && h.size() > 55 && h[55] != '-')
        return std::nullopt;
    context c;
    std::array<std::uint8_t, 8> span{};
    std::uint8_t flags = 0;
    if (!read_hex(h.substr(3, 32), c.trace.data(), 16) ||
        !read_hex(h.substr(36, 16), span.data(), 8) || !read_hex(h.substr(53, 2), &flags, 1))
        return std::nullopt;
    for (auto b : span)
        c.span = (c.span << 8) | b;
    c.flags = flags;
    if (!c.valid())
        return std::nullopt;
    return c;
}

std::string to_hex(const trace_id& t) {
    std::string s;
    s.reserve(32);
    write_hex(t.data(), t.size(), s);
    return s;
}

std::string to_hex(std::uint64_t span) {
    std::array<std::uint8_t, 8> b{};
    for (int i = 7; i >= 0; --i, span >>= 8)
        b[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(span & 0xff);
    std::string s;
    s.reserve(16);
    write_hex(b.data(), b.size(), s);
    return s;
}

std::string format_traceparent(const context& c) {
    std::string s = "00-" + to_hex(c.trace) + "-" + to_hex(c.span) + "-";
    const std::uint8_t f = c.flags;
    write_hex(&f, 1, s);
    return s;
}

trace_id new_trace_id() {
    trace_id t{};
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    while (a == 0 && b == 0) {
        a = rng()();
        b = rng()();
    }
    for (std::size_t i = 0; i < 8; ++i) {
        t[i] = static_cast<std::uint8_t>(a >> (8 * i));
        t[8 + i] = static_cast<std::uint8_t>(b >> (8 * i));
    }
    return t;
}

std::uint64_t new_span_id() {
    std::uint64_t v = 0;
    while (v == 0)
        v = rng()();
    return v;
}

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int64_t unix_ns(std::chrono::steady_clock::time_point t) noexcept {
    const auto steady_now = std::chrono::steady_clock::now();
    const auto ago = std::chrono::duration_cast<std::chrono::nanoseconds>(steady_now - t).count();
    return now_ns() - ago;
}

span_record child_of(const context& parent, std::string name, span_kind kind) {
    span_record s;
    s.ctx.trace = parent.trace;
    s.ctx.flags = parent.flags;
    s.ctx.state = parent.state;
    s.ctx.span = new_span_id();
    s.parent = parent.span;
    s.name = std::move(name);
    s.kind = kind;
    s.start_ns = now_ns();
    return s;
}

recorder& recorder::process() {
    static recorder r;
    return r;
}

void recorder::configure(const settings& s) {
    {
        std::lock_guard lk(mu_);
        queue_max_ = s.queue_spans;
        stopping_ = false;
    }
    const double ratio = std::clamp(s.sample_ratio, 0.0, 1.0);
    ratio_bound_.store(ratio >= 1.0 ? std::numeric_limits<std::uint64_t>::max()
                                    : static_cast<std::uint64_t>(std::ldexp(ratio, 64)),
                       std::memory_order_relaxed);
    include_text_.store(s.include_text, std::memory_order_relaxed);
    enabled_.store(s.enabled, std::memory_order_relaxed);
}

context recorder::start(const std::optional<context>& incoming) const {
    context c;
    if (incoming && incoming->valid()) {
        c = *incoming; // the caller's trace; its span becomes our first span's parent
        c.flags = enabled() ? incoming->flags : static_cast<std::uint8_t>(incoming->flags & ~1u);
    } else {
        c.trace = new_trace_id();
        const auto bound = ratio_bound_.load(std::memory_order_relaxed);
        const bool all = bound == std::numeric_limits<std::uint64_t>::max();
        c.flags = enabled() && (all || low_bits(c.trace) < bound) ? 1 : 0;
        c.span = 0;
    }
    return c;
}

void recorder::submit(span_record&& s) {
    {
        std::lock_guard lk(mu_);
        if (queue_.size() < queue_max_ && !stopping_) {
            queue_.push_back(std::move(s));
            if (queue_.size() >= 512)
                cv_.notify_one();
            return;
        }
    }
    count_dropped(1);
}

std::vector<span_record> recorder::take(std::size_t max, std::chrono::milliseconds wait) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, wait, [&] { return stopping_ || queue_.size() >= max; });
    std::vector<span_record> out;
    const auto n = std::min(max, queue_.size());
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(std::move(queue_.front()));
        queue_.pop_front();
    }
    return out;
}

void recorder::stop() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    stop_cv_.notify_all();
}

bool recorder::stopped() const {
    std::lock_guard lk(mu_);
    return stopping_;
}

bool recorder::wait_stopped(std::chrono::milliseconds d) {
    std::unique_lock lk(mu_);
    return stop_cv_.wait_for(lk, d, [&] { return stopping_; });
}

} // namespace bitnet::trace
