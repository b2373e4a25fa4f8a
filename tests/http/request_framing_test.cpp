// RFC 9112's refusals of a request's header section (transport/request_errors.hpp,
// framing_refusal): what cannot be framed, codings this server does not decode, Host, Expect.
#include "http/transport/request_errors.hpp"

#include <boost/beast/http/fields.hpp>
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <utility>

using namespace bitnet::http;
namespace bhttp = boost::beast::http;

namespace {

bhttp::fields fields_of(std::initializer_list<std::pair<const char*, const char*>> list,
                        bool host = true) {
    bhttp::fields f;
    if (host)
        f.insert(bhttp::field::host, "t");
    for (const auto& [name, value] : list)
        f.insert(name, value);
    return f;
}

unsigned refused(const bhttp::fields& f, unsigned version = 11) {
    const auto e = framing_refusal(f, version);
    return e ? e->status : 0;
}

} // namespace

TEST_CASE("framing: a Transfer-Encoding that does not end in chunked is a 400, with or without "
          "Content-Length") {
    CHECK(refused(fields_of({{"Transfer-Encoding", "gzip"}, {"Content-Length", "5"}})) == 400);
    CHECK(refused(fields_of({{"Transfer-Encoding", "gzip"}})) == 400);
    CHECK(refused(fields_of({{"Transfer-Encoding", "chunked, gzip"}})) == 400);
    CHECK(refused(fields_of({{"Transfer-Encoding", ""}})) == 400);
    CHECK(refused(fields_of({{"Transfer-Encoding", "chunked, chunked"}})) == 400);
    const auto e = framing_refusal(fields_of({{"Transfer-Encoding", "identity"}}), 11);
    REQUIRE(e);
    CHECK(e->message.find("must end in chunked") != std::string::npos);
    // chunked alone (any case, with whitespace) is read as before.
    CHECK(refused(fields_of({{"Transfer-Encoding", "chunked"}})) == 0);
    CHECK(refused(fields_of({{"Transfer-Encoding", " Chunked "}})) == 0);
    CHECK(refused(fields_of({{"Content-Length", "5"}})) == 0);
}

TEST_CASE("framing: a coding this server does not decode before chunked is a 501") {
    for (const char* te : {"gzip, chunked", "deflate,chunked", "br, chunked"}) {
        CAPTURE(te);
        const auto e = framing_refusal(fields_of({{"Transfer-Encoding", te}}), 11);
        REQUIRE(e);
        CHECK(e->status == 501);
        CHECK(e->code == "unsupported_transfer_coding");
    }
    // Split over two fields, it is one list.
    bhttp::fields two = fields_of({});
    two.insert(bhttp::field::transfer_encoding, "gzip");
    two.insert(bhttp::field::transfer_encoding, "chunked");
    CHECK(refused(two) == 501);
}

TEST_CASE("framing: HTTP/1.1 needs exactly one Host, HTTP/1.0 none") {
    CHECK(refused(fields_of({}, false)) == 400);
    bhttp::fields twice = fields_of({});
    twice.insert(bhttp::field::host, "u");
    CHECK(refused(twice) == 400);
    CHECK(framing_refusal(twice, 11)->message.find("exactly one Host") != std::string::npos);
    CHECK(refused(fields_of({})) == 0);
    CHECK(refused(fields_of({}, false), 10) == 0);
}

TEST_CASE("framing: Expect 100-continue is understood, any other expectation is a 417") {
    const auto go_on = fields_of({{"Expect", "100-Continue"}});
    CHECK(refused(go_on) == 0);
    CHECK(expects_continue(go_on, 11));
    CHECK_FALSE(expects_continue(go_on, 10));
    CHECK_FALSE(expects_continue(fields_of({}), 11));
    CHECK(refused(fields_of({{"Expect", "something-else"}})) == 417);
}
