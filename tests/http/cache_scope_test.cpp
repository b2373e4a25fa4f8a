// http/cache_scope: which requests may share cached prompt blocks.
#include "http/cache_scope.hpp"

#include "http/api_json.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>

using namespace bitnet::http;

TEST_CASE("cache scope: one per key, one per group, narrowed by the salt, shared without keys") {
    const std::vector<std::string> keys{"key-aaaaaaaa", "key-bbbbbbbb", "key-cccccccc",
                                        "key-dddddddd"};
    const std::vector<std::vector<std::string>> groups{{"key-cccccccc", "key-dddddddd"}};
    const auto a = cache_scope_of(keys, groups, "key-aaaaaaaa", "");
    const auto b = cache_scope_of(keys, groups, "key-bbbbbbbb", "");
    CHECK(a != 0);
    CHECK(a != b);
    CHECK(a == cache_scope_of(keys, groups, "key-aaaaaaaa", "")); // the same key: the same scope
    // A group shares one scope; its salt still separates.
    CHECK(cache_scope_of(keys, groups, "key-cccccccc", "") ==
          cache_scope_of(keys, groups, "key-dddddddd", ""));
    CHECK(cache_scope_of(keys, groups, "key-cccccccc", "") != a);
    CHECK(cache_scope_of(keys, groups, "key-cccccccc", "s") !=
          cache_scope_of(keys, groups, "key-dddddddd", ""));
    // The salt narrows a key's scope.
    const auto a1 = cache_scope_of(keys, groups, "key-aaaaaaaa", "one");
    CHECK(a1 != a);
    CHECK(a1 != cache_scope_of(keys, groups, "key-aaaaaaaa", "two"));
    CHECK(a1 == cache_scope_of(keys, groups, "key-aaaaaaaa", "one"));
    // No keys configured (one tenant): everything shares, unless salted.
    CHECK(cache_scope_of({}, {}, "", "") == 0);
    CHECK(cache_scope_of({}, {}, "anything", "") == 0);
    CHECK(cache_scope_of({}, {}, "", "x") != 0);
    // A key and a salt cannot combine to spell another key.
    CHECK(cache_scope_of(keys, {}, "key-aaaaaaaa", "b") !=
          cache_scope_of(keys, {}, "key-aaaaaaaab", ""));
}

TEST_CASE("cache_salt: a string of at most 256 bytes on every inference route") {
    auto ok = parse_inference(R"({"prompt":"x","cache_salt":"tenant-7"})", api_family::completions);
    REQUIRE(std::holds_alternative<inference_input>(ok));
    CHECK(std::get<inference_input>(ok).cache_salt == "tenant-7");
    auto chat = parse_inference(R"({"messages":[{"role":"user","content":"x"}],"cache_salt":"s"})",
                                api_family::chat);
    REQUIRE(std::holds_alternative<inference_input>(chat));
    CHECK(std::get<inference_input>(chat).cache_salt == "s");
    auto bad = parse_inference(R"({"prompt":"x","cache_salt":7})", api_family::completions);
    REQUIRE(std::holds_alternative<api_error>(bad));
    CHECK(std::get<api_error>(bad).param == "cache_salt");
    auto long_salt = parse_inference(
        R"({"prompt":"x","cache_salt":")" + std::string(257, 's') + R"("})", api_family::native);
    REQUIRE(std::holds_alternative<api_error>(long_salt));
    CHECK(std::get<api_error>(long_salt).param == "cache_salt");
}
