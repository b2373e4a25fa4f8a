// Distributed tracing, the part every room may use: W3C trace context (traceparent), the span
// records the server produces, and the process's span queue that the OTLP exporter drains
// (http/observe/otlp_exporter.hpp). Recording a span is a few field moves and one lock; with
// tracing off (no otlp_endpoint) nothing is sampled, so no span is ever built.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace bitnet::trace {

/// A trace id: 16 bytes, all zero = none (W3C: invalid).
using trace_id = std::array<std::uint8_t, 16>;

/// One span's place in a trace: what `traceparent` carries (plus `tracestate`, kept as it came).
struct context {
    trace_id trace{};
    std::uint64_t span = 0; ///< 0 = none
    std::uint8_t flags = 0; ///< bit 0: sampled
    std::string state;      ///< tracestate, passed on untouched

    [[nodiscard]] bool valid() const noexcept;
    [[nodiscard]] bool sampled() const noexcept { return (flags & 1u) != 0; }
};

/// Parses a W3C `traceparent` (version 00, or a later version read as 00 allows): nullopt for
/// anything malformed, an all-zero trace or span id, or version ff.
[[nodiscard]] std::optional<context> parse_traceparent(std::string_view header);
/// `00-<trace>-<span>-<flags>`.
[[nodiscard]] std::string format_traceparent(const context& c);
[[nodiscard]] std::string to_hex(const trace_id& t);
[[nodiscard]] std::string to_hex(std::uint64_t span);

/// Fresh random ids (never zero), from a per-thread generator seeded from the OS.
[[nodiscard]] trace_id new_trace_id();
[[nodiscard]] std::uint64_t new_span_id();

/// Unix time in nanoseconds (what OTLP timestamps are).
[[nodiscard]] std::int64_t now_ns() noexcept;
/// A steady-clock time point as Unix nanoseconds (the batcher's timings are steady).
[[nodiscard]] std::int64_t unix_ns(std::chrono::steady_clock::time_point t) noexcept;

/// An attribute value: OTLP's AnyValue, as far as the server uses it.
using value = std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>>;
struct attribute {
    std::string key;
    value v;
};
using attributes = std::vector<attribute>;

struct event {
    std::string name;
    std::int64_t time_ns = 0;
    attributes attrs;
};

struct link {
    trace_id trace{};
    std::uint64_t span = 0;
    std::uint8_t flags = 0;
    attributes attrs;
};

/// OTLP's SpanKind values.
enum class span_kind : std::uint8_t { internal = 1, server = 2, client = 3 };
/// OTLP's StatusCode values.
enum class status_code : std::uint8_t { unset = 0, ok = 1, error = 2 };

/// One finished span, as the exporter sends it.
struct span_record {
    context ctx;              ///< its own trace, id, flags and tracestate
    std::uint64_t parent = 0; ///< 0: a root span
    std::string name;
    span_kind kind = span_kind::internal;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    attributes attrs;
    std::vector<event> events;
    std::vector<link> links;
    status_code status = status_code::unset;
    std::string status_message;
};

/// A child of `parent` (same trace and flags), started now: fill in, then submit.
[[nodiscard]] span_record child_of(const context& parent, std::string name,
                                   span_kind kind = span_kind::internal);

/// The process's tracing switch, sampler and span queue. One per process (process()); the
/// exporter is its only consumer.
class recorder {
public:
    [[nodiscard]] static recorder& process();

    struct settings {
        bool enabled = false;      ///< an endpoint is configured
        double sample_ratio = 1.0; ///< for traces that start here
        std::size_t queue_spans = 4096;
        bool include_text = false; ///< prompt and output text may go into spans
    };
    void configure(const settings& s);

    [[nodiscard]] bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
    [[nodiscard]] bool include_text() const noexcept {
        return include_text_.load(std::memory_order_relaxed);
    }

    /// The context of a request's first span here: a child of the caller's (`incoming`, from
    /// traceparent), whose sampled flag is honoured as it came (parent-based sampling), or a new
    /// trace sampled at the configured ratio. With tracing off, new traces are never sampled.
    [[nodiscard]] context start(const std::optional<context>& incoming) const;

    /// Queues a finished span; when the queue is full it is dropped and counted.
    void submit(span_record&& s);

    /// The exporter's side: up to `max` spans, waiting until there are `max`, `wait` passed or
    /// stop() was called.
    [[nodiscard]] std::vector<span_record> take(std::size_t max, std::chrono::milliseconds wait);
    /// Wakes take() for the last time; later spans are dropped.
    void stop();
    [[nodiscard]] bool stopped() const;
    /// Sleeps up to `d`, less when stop() is called: whether it was.
    [[nodiscard]] bool wait_stopped(std::chrono::milliseconds d);

    /// Spans lost: the queue was full, or an export failed for good (the exporter counts those).
    void count_dropped(std::uint64_t n) noexcept {
        dropped_.fetch_add(n, std::memory_order_relaxed);
    }
    void count_exported(std::uint64_t n) noexcept {
        exported_.fetch_add(n, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t dropped() const noexcept {
        return dropped_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t exported() const noexcept {
        return exported_.load(std::memory_order_relaxed);
    }

private:
    std::atomic<bool> enabled_{false};
    std::atomic<bool> include_text_{false};
    std::atomic<std::uint64_t> ratio_bound_{0}; ///< sample when a random u64 < this (ratio 1: max)
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> exported_{0};
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable stop_cv_;
    std::deque<span_record> queue_;
    std::size_t queue_max_ = 4096;
    bool stopping_ = false;
};

} // namespace bitnet::trace
