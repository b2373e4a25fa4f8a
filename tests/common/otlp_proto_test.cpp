// The hand-written OTLP protobuf encoder (common/otlp_proto.hpp), read back with a minimal wire
// reader here: field numbers, wire types and values of every part the server writes. The
// independent check (the official definitions decoding a live server's export) is
// tests/server/tracing_test.cpp with tests/clients/otlp_collector.mjs.
#include "common/otlp_proto.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <map>

namespace bitnet::trace {

namespace {

/// One field of a message: its wire type and its payload (a varint's or fixed's value, or the
/// bytes of a length-delimited field).
struct wire_field {
    std::uint32_t wire = 0;
    std::uint64_t number = 0;
    std::string bytes;
};

/// A message's fields by field number, in order. Fails the test on malformed input.
std::multimap<std::uint32_t, wire_field> read(const std::string& m) {
    std::multimap<std::uint32_t, wire_field> out;
    std::size_t at = 0;
    auto varint = [&] {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            REQUIRE(at < m.size());
            const auto b = static_cast<std::uint8_t>(m[at++]);
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0)
                return v;
        }
        FAIL("varint too long");
        return v;
    };
    while (at < m.size()) {
        const auto key = varint();
        wire_field f;
        f.wire = static_cast<std::uint32_t>(key & 7);
        const auto field = static_cast<std::uint32_t>(key >> 3);
        if (f.wire == 0) {
            f.number = varint();
        } else if (f.wire == 1 || f.wire == 5) {
            const std::size_t n = f.wire == 1 ? 8 : 4;
            REQUIRE(at + n <= m.size());
            for (std::size_t i = 0; i < n; ++i)
                f.number |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(m[at + i]))
                            << (8 * i);
            at += n;
        } else {
            REQUIRE(f.wire == 2);
            const auto n = varint();
            REQUIRE(at + n <= m.size());
            f.bytes = m.substr(at, n);
            at += n;
        }
        out.emplace(field, std::move(f));
    }
    return out;
}

const wire_field& one(const std::multimap<std::uint32_t, wire_field>& m, std::uint32_t n) {
    REQUIRE(m.count(n) == 1);
    return m.find(n)->second;
}

} // namespace

TEST_CASE("otlp protobuf: an export request holds the resource, the scope and every span field "
          "at the official field numbers") {
    span_record s;
    s.ctx = *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    s.parent = 0x1122334455667788ULL;
    s.name = "bitnet.generate";
    s.kind = span_kind::server;
    s.start_ns = 1'700'000'000'123'456'789LL;
    s.end_ns = 1'700'000'001'000'000'000LL;
    s.attrs = {{"s", std::string("text")},
               {"i", std::int64_t{-5}},
               {"d", 0.5},
               {"b", true},
               {"a", std::vector<std::string>{"x", "y"}}};
    s.events = {{"bitnet.migrate", 1'700'000'000'500'000'000LL, {{"k", std::int64_t{7}}}}};
    s.links = {{s.ctx.trace, 42, 1, {}}};
    s.status = status_code::error;
    s.status_message = "boom";
    const auto body = encode_export_request({s}, {{"service.name", std::string("bitnet-serve")}},
                                            "bitnet-serve", "0.1.0");

    const auto req = read(body);
    const auto rs = read(one(req, 1).bytes);      // ResourceSpans
    const auto resource = read(one(rs, 1).bytes); // Resource
    const auto kv = read(one(resource, 1).bytes); // KeyValue
    CHECK(one(kv, 1).bytes == "service.name");
    CHECK(one(read(one(kv, 2).bytes), 1).bytes == "bitnet-serve");
    const auto ss = read(one(rs, 2).bytes); // ScopeSpans
    const auto scope = read(one(ss, 1).bytes);
    CHECK(one(scope, 1).bytes == "bitnet-serve");
    CHECK(one(scope, 2).bytes == "0.1.0");
    const auto span = read(one(ss, 2).bytes); // Span
    CHECK(one(span, 1).bytes.size() == 16);
    CHECK(static_cast<std::uint8_t>(one(span, 1).bytes[0]) == 0x4b);
    CHECK(one(span, 2).bytes == std::string("\x00\xf0\x67\xaa\x0b\xa9\x02\xb7", 8));
    CHECK(one(span, 4).bytes == std::string("\x11\x22\x33\x44\x55\x66\x77\x88", 8));
    CHECK(one(span, 5).bytes == "bitnet.generate");
    CHECK(one(span, 6).number == 2);
    CHECK(one(span, 7).wire == 1);
    CHECK(one(span, 7).number == 1'700'000'000'123'456'789ULL);
    CHECK(one(span, 8).number == 1'700'000'001'000'000'000ULL);
    CHECK(one(span, 16).wire == 5);
    CHECK(one(span, 16).number == 1);
    // Attributes, in order, each value in its AnyValue field.
    std::map<std::string, std::multimap<std::uint32_t, wire_field>> values;
    for (auto [it, end] = span.equal_range(9); it != end; ++it) {
        const auto a = read(it->second.bytes);
        values[one(a, 1).bytes] = read(one(a, 2).bytes);
    }
    CHECK(one(values["s"], 1).bytes == "text");
    CHECK(static_cast<std::int64_t>(one(values["i"], 3).number) == -5);
    double d = 0;
    const auto bits = one(values["d"], 4).number;
    std::memcpy(&d, &bits, sizeof d);
    CHECK(d == 0.5);
    CHECK(one(values["b"], 2).number == 1);
    const auto arr = read(one(values["a"], 5).bytes);
    CHECK(arr.count(1) == 2);
    // Event, link, status.
    const auto ev = read(one(span, 11).bytes);
    CHECK(one(ev, 1).number == 1'700'000'000'500'000'000ULL);
    CHECK(one(ev, 2).bytes == "bitnet.migrate");
    CHECK(ev.count(3) == 1);
    const auto link = read(one(span, 13).bytes);
    CHECK(one(link, 1).bytes.size() == 16);
    CHECK(one(link, 2).bytes == std::string("\0\0\0\0\0\0\0\x2a", 8));
    const auto status = read(one(span, 15).bytes);
    CHECK(one(status, 2).bytes == "boom");
    CHECK(one(status, 3).number == 2);
}

TEST_CASE("otlp protobuf: a root span has no parent field, an empty batch is one empty scope") {
    span_record s;
    s.ctx.trace = new_trace_id();
    s.ctx.span = new_span_id();
    s.name = "bitnet.step";
    const auto span = read(
        one(read(one(read(one(read(encode_export_request({s}, {}, "x", "y")), 1).bytes), 2).bytes),
            2)
            .bytes);
    CHECK(span.count(4) == 0);
    CHECK(span.count(15) == 0); // unset status: not written
    const auto empty =
        read(one(read(one(read(encode_export_request({}, {}, "x", "y")), 1).bytes), 2).bytes);
    CHECK(empty.count(2) == 0);
}

} // namespace bitnet::trace
