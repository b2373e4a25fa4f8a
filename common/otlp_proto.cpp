#include "common/otlp_proto.hpp"

#include <cstdint>
#include <cstring>

namespace bitnet::trace {

namespace {

// Protobuf wire types.
constexpr std::uint32_t varint = 0;
constexpr std::uint32_t fixed64 = 1;
constexpr std::uint32_t bytes = 2;
constexpr std::uint32_t fixed32 = 5;

/// One message being written: fields append to `out`; a nested message is written into its own
/// writer and appended with its length (sizes are small, so the copy costs nothing that shows).
struct writer {
    std::string out;

    void raw_varint(std::uint64_t v) {
        while (v >= 0x80) {
            out.push_back(static_cast<char>((v & 0x7f) | 0x80));
            v >>= 7;
        }
        out.push_back(static_cast<char>(v));
    }
    void tag(std::uint32_t field, std::uint32_t wire) { raw_varint((field << 3) | wire); }
    void u64(std::uint32_t field, std::uint64_t v) {
        tag(field, varint);
        raw_varint(v);
    }
    void f64(std::uint32_t field, std::uint64_t v) {
        tag(field, fixed64);
        for (int i = 0; i < 8; ++i)
            out.push_back(static_cast<char>(v >> (8 * i)));
    }
    void f32(std::uint32_t field, std::uint32_t v) {
        tag(field, fixed32);
        for (int i = 0; i < 4; ++i)
            out.push_back(static_cast<char>(v >> (8 * i)));
    }
    void str(std::uint32_t field, std::string_view s) {
        tag(field, bytes);
        raw_varint(s.size());
        out.append(s);
    }
    void blob(std::uint32_t field, const std::uint8_t* p, std::size_t n) {
        str(field, std::string_view(reinterpret_cast<const char*>(p), n));
    }
    void message(std::uint32_t field, const writer& w) { str(field, w.out); }
};

void span_id_bytes(writer& w, std::uint32_t field, std::uint64_t id) {
    std::uint8_t b[8];
    for (int i = 7; i >= 0; --i, id >>= 8)
        b[i] = static_cast<std::uint8_t>(id & 0xff);
    w.blob(field, b, 8);
}

// common/v1: AnyValue { string_value 1; bool_value 2; int_value 3; double_value 4;
// array_value 5 (ArrayValue { repeated AnyValue values 1 }) }.
writer any_value(const value& v) {
    writer w;
    if (const auto* s = std::get_if<std::string>(&v)) {
        w.str(1, *s);
    } else if (const auto* b = std::get_if<bool>(&v)) {
        w.u64(2, *b ? 1 : 0);
    } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
        w.u64(3, static_cast<std::uint64_t>(*i)); // int64: two's complement as a varint
    } else if (const auto* d = std::get_if<double>(&v)) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, d, sizeof bits);
        w.f64(4, bits);
    } else if (const auto* a = std::get_if<std::vector<std::string>>(&v)) {
        writer arr;
        for (const auto& item_text : *a) {
            writer item;
            item.str(1, item_text);
            arr.message(1, item);
        }
        w.message(5, arr);
    }
    return w;
}

// KeyValue { string key 1; AnyValue value 2 }
void key_values(writer& w, std::uint32_t field, const attributes& attrs) {
    for (const auto& a : attrs) {
        writer kv;
        kv.str(1, a.key);
        kv.message(2, any_value(a.v));
        w.message(field, kv);
    }
}

// trace/v1 Span: trace_id 1, span_id 2, trace_state 3, parent_span_id 4, name 5, kind 6,
// start_time_unix_nano 7 (fixed64), end_time_unix_nano 8 (fixed64), attributes 9, events 11,
// links 13, status 15, flags 16 (fixed32).
writer span_message(const span_record& s) {
    writer w;
    w.blob(1, s.ctx.trace.data(), s.ctx.trace.size());
    span_id_bytes(w, 2, s.ctx.span);
    if (!s.ctx.state.empty())
        w.str(3, s.ctx.state);
    if (s.parent != 0)
        span_id_bytes(w, 4, s.parent);
    w.str(5, s.name);
    w.u64(6, static_cast<std::uint64_t>(s.kind));
    w.f64(7, static_cast<std::uint64_t>(s.start_ns));
    w.f64(8, static_cast<std::uint64_t>(s.end_ns));
    key_values(w, 9, s.attrs);
    // Event: time_unix_nano 1 (fixed64), name 2, attributes 3.
    for (const auto& e : s.events) {
        writer ev;
        ev.f64(1, static_cast<std::uint64_t>(e.time_ns));
        ev.str(2, e.name);
        key_values(ev, 3, e.attrs);
        w.message(11, ev);
    }
    // Link: trace_id 1, span_id 2, attributes 4, flags 6 (fixed32).
    for (const auto& l : s.links) {
        writer lk;
        lk.blob(1, l.trace.data(), l.trace.size());
        span_id_bytes(lk, 2, l.span);
        key_values(lk, 4, l.attrs);
        lk.f32(6, l.flags); // the W3C trace flags (remoteness bits left unset: unknown)
        w.message(13, lk);
    }
    // Status: message 2, code 3.
    if (s.status != status_code::unset || !s.status_message.empty()) {
        writer st;
        if (!s.status_message.empty())
            st.str(2, s.status_message);
        st.u64(3, static_cast<std::uint64_t>(s.status));
        w.message(15, st);
    }
    w.f32(16, s.ctx.flags); // the W3C trace flags (remoteness bits left unset: unknown)
    return w;
}

} // namespace

std::string encode_export_request(const std::vector<span_record>& spans, const attributes& resource,
                                  std::string_view scope_name, std::string_view scope_version) {
    // ScopeSpans { InstrumentationScope scope 1 { name 1; version 2 }; repeated Span spans 2 }
    writer scope;
    scope.str(1, scope_name);
    scope.str(2, scope_version);
    writer scope_spans;
    scope_spans.message(1, scope);
    for (const auto& s : spans)
        scope_spans.message(2, span_message(s));
    // ResourceSpans { Resource resource 1 { repeated KeyValue attributes 1 }; ScopeSpans 2 }
    writer res;
    key_values(res, 1, resource);
    writer rs;
    rs.message(1, res);
    rs.message(2, scope_spans);
    // ExportTraceServiceRequest { repeated ResourceSpans resource_spans 1 }
    writer req;
    req.message(1, rs);
    return std::move(req.out);
}

} // namespace bitnet::trace
