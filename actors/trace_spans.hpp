// Spans the actors make for a request's trace (common/trace.hpp): only for sampled requests,
// each a child of the span the request's trace_ref names. Header-only: a few lines each.
#pragma once

#include "common/trace.hpp"
#include "messages/types.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace bitnet::actors {

/// A span of request trace `ref`, started now; nothing when the request is not sampled or this
/// node does not trace (a request placed by a node that does: its spans would have no exporter).
[[nodiscard]] inline std::optional<trace::span_record> open_span(const msg::trace_ref& ref,
                                                                 std::string name) {
    if (!ref.sampled() || !trace::recorder::process().enabled())
        return std::nullopt;
    return trace::child_of(ref.context(), std::move(name));
}

/// Ends `s` now (or at `end_ns`) and queues it for export; empties it.
inline void close_span(std::optional<trace::span_record>& s, std::int64_t end_ns = 0) {
    if (!s)
        return;
    s->end_ns = end_ns != 0 ? end_ns : trace::now_ns();
    trace::recorder::process().submit(std::move(*s));
    s.reset();
}

inline void span_attr(std::optional<trace::span_record>& s, std::string key, trace::value v) {
    if (s)
        s->attrs.push_back({std::move(key), std::move(v)});
}

inline void span_error(std::optional<trace::span_record>& s, std::string message) {
    if (!s)
        return;
    s->status = trace::status_code::error;
    s->status_message = std::move(message);
}

/// A span that ends when the last owner lets go of it (a request's admission, which may wait
/// for an asynchronous tokenization).
struct shared_span {
    std::optional<trace::span_record> s;
    ~shared_span() { close_span(s); }
};
using shared_span_ptr = std::shared_ptr<shared_span>;

[[nodiscard]] inline shared_span_ptr open_shared_span(const msg::trace_ref& ref, std::string name) {
    auto s = open_span(ref, std::move(name));
    if (!s)
        return nullptr;
    auto p = std::make_shared<shared_span>();
    p->s = std::move(s);
    return p;
}

} // namespace bitnet::actors
