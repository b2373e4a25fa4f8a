// Error bodies quote at most a short excerpt of a value the client sent (http/errors.hpp,
// `excerpt` and the message and param bounds), cut where a UTF-8 character begins: a 500 KB model
// name or field is never echoed whole, in the OpenAI shape or in Anthropic's.
#include "http/anthropic/api_anthropic.hpp"
#include "http/errors.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <string>

using namespace bitnet::http;

TEST_CASE("excerpt: short values whole, long ones cut at a character boundary, marked") {
    CHECK(excerpt("gpt-tiny") == "gpt-tiny");
    CHECK(excerpt(std::string(64, 'a')) == std::string(64, 'a'));
    CHECK(excerpt(std::string(65, 'a')) == std::string(64, 'a') + "...");
    // Two-byte characters: a cut inside one backs off to its start.
    std::string accents;
    for (int i = 0; i < 40; ++i)
        accents += "\xC3\xA9";
    CHECK(excerpt(accents, 64) == accents.substr(0, 64) + "...");
    CHECK(excerpt(accents, 63) == accents.substr(0, 62) + "...");
    // A four-byte character cut anywhere inside is left out whole.
    const std::string emoji = "ab\xF0\x9F\x98\x80";
    CHECK(excerpt(emoji, 3) == "ab...");
    CHECK(excerpt(emoji, 5) == "ab...");
}

TEST_CASE("error bodies stay small whatever the message quotes") {
    const std::string huge(500'000, 'm');
    const auto e = invalid_value(huge, "no model '" + huge + "'");
    const auto body = error_body(e, "req-1");
    CHECK(body.size() < max_error_message_bytes + max_error_param_bytes + 400);
    const auto err = boost::json::parse(body).at("error").as_object();
    const std::string message(err.at("message").as_string());
    CHECK(message.size() <= max_error_message_bytes + 3);
    CHECK(message.rfind("no model 'mmm", 0) == 0);
    CHECK(message.ends_with("..."));
    CHECK(err.at("param").as_string().size() <= max_error_param_bytes + 3);
    // A short error is as it was.
    const auto small = boost::json::parse(error_body(invalid_value("n", "n must be 1..8"), "r"));
    CHECK(small.at("error").at("message") == "n must be 1..8");
    CHECK(small.at("error").at("param") == "n");

    // Anthropic's shape is cut the same way.
    const auto a = anthropic_error_body(e, "req-1");
    CHECK(a.size() < max_error_message_bytes + max_error_param_bytes + 400);
    CHECK(boost::json::parse(a).at("error").at("message").as_string().ends_with("..."));
}
