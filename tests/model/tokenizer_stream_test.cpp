// token_stream: generated tokens come out as whole UTF-8 characters only.
#include "model/tokenizer/tokenizer_stream.hpp"

#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/unicode.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet::model;

namespace {

// 256 byte tokens (ids = byte values) plus a control end token (256) and "ab" (257).
tokenizer byte_vocab() {
    tokenizer_vocab v;
    v.model = "gpt2";
    for (int b = 0; b < 256; ++b) {
        v.tokens.emplace_back(gpt2_byte_to_utf8(static_cast<std::uint8_t>(b)));
        v.token_types.push_back(1);
    }
    v.tokens.emplace_back("<|end|>");
    v.token_types.push_back(3);
    v.tokens.emplace_back("ab");
    v.token_types.push_back(1);
    v.merges = {"a b"};
    v.eos_id = 256;
    auto t = tokenizer::create(std::move(v));
    REQUIRE(t);
    return *t;
}

const std::string grinning = "\xF0\x9F\x98\x80"; // U+1F600, four bytes
const std::string fffd = "\xEF\xBF\xBD";

} // namespace

TEST_CASE("a 4-byte emoji split into byte tokens is held back until complete") {
    const auto tok = byte_vocab();
    auto ids = tok.encode(grinning);
    REQUIRE(ids);
    REQUIRE(ids->size() == 4);
    token_stream s(tok);
    CHECK(s.push((*ids)[0]).empty());
    CHECK(s.push((*ids)[1]).empty());
    CHECK(s.push((*ids)[2]).empty());
    CHECK(s.pending_bytes() == 3);
    CHECK(s.push((*ids)[3]) == grinning);
    CHECK(s.pending_bytes() == 0);
    CHECK(s.flush().empty());
}

TEST_CASE("token_stream passes whole characters through and mixes them with partial ones") {
    const auto tok = byte_vocab();
    token_stream s(tok);
    CHECK(s.push(257) == "ab");
    CHECK(s.push(0xC3).empty()); // first byte of é
    CHECK(s.push(0xA9) == "\xC3\xA9");
    CHECK(s.push(' ') == " ");
    CHECK(s.push(256).empty()); // control tokens render as nothing by default
    token_stream special(tok, {.render_special = true, .strip_leading_space = false});
    CHECK(special.push(256) == "<|end|>");
}

TEST_CASE("token_stream turns bytes that can never be valid into U+FFFD") {
    const auto tok = byte_vocab();
    token_stream s(tok);
    CHECK(s.push(0xFF) == fffd);
    CHECK(s.push(0x80) == fffd);      // a lone continuation byte
    CHECK(s.push(0xE2).empty());      // start of a 3-byte character ...
    CHECK(s.push('x') == fffd + "x"); // ... interrupted
    CHECK(s.push(0xF0).empty());
    CHECK(s.push(0x9F).empty());
    CHECK(s.flush() == fffd); // unfinished at the end
    CHECK(s.pending_bytes() == 0);
    CHECK(s.push(0xF0).empty());
    s.reset();
    CHECK(s.push('y') == "y");
}
