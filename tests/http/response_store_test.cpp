// The Responses store: replies kept per API key and named later (previous_response_id,
// item_reference), bounded by count, age and bytes, oldest first; and the request expansion that
// fills the stored parts in or refuses a name that is not kept.
#include "http/responses/response_store.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <variant>

using namespace bitnet::http;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const std::string conv = R"([{"type":"message","role":"user","content":"hi"},)"
                         R"({"id":"msg_a","type":"message","role":"assistant","content":"yo"}])";

std::vector<std::pair<std::string, std::string>> outs(const std::string& id) {
    return {{id, R"({"id":")" + id + R"(","type":"message","role":"assistant","content":"yo"})"}};
}

responses_expansion expand_ok(response_store& s, const std::string& body,
                              const std::string& scope = "k1") {
    auto r = expand_responses_request(body, s, scope, 1 << 20);
    REQUIRE_MESSAGE(std::holds_alternative<responses_expansion>(r), std::get<api_error>(r).message);
    return std::get<responses_expansion>(std::move(r));
}

api_error expand_error(response_store& s, const std::string& body, const std::string& scope = "k1",
                       std::size_t max_bytes = 1 << 20) {
    auto r = expand_responses_request(body, s, scope, max_bytes);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(std::move(r));
}

} // namespace

TEST_CASE("response store: a key sees only its own replies, items by id, until they expire") {
    response_store s({10, 60s, 1 << 20});
    const auto t0 = response_store::clock::now();
    s.put("k1", "resp_1", conv, outs("msg_a"), t0);
    CHECK(s.conversation("k1", "resp_1", t0) == conv);
    CHECK(s.item("k1", "msg_a", t0).has_value());
    CHECK_FALSE(s.conversation("k2", "resp_1", t0));
    CHECK_FALSE(s.item("k2", "msg_a", t0));
    CHECK_FALSE(s.conversation("k1", "resp_2", t0));
    CHECK(s.conversation("k1", "resp_1", t0 + 59s));
    CHECK_FALSE(s.conversation("k1", "resp_1", t0 + 61s));
    CHECK_FALSE(s.item("k1", "msg_a", t0 + 61s));
    CHECK(s.size() == 0);
    CHECK(s.bytes() == 0);
}

TEST_CASE("response store: past the count or the bytes the oldest go first, and a reply too big "
          "alone is not kept") {
    response_store by_count({2, 3600s, 1 << 20});
    for (int i = 0; i < 3; ++i)
        by_count.put("k", "resp_" + std::to_string(i), conv, outs("m" + std::to_string(i)));
    CHECK(by_count.size() == 2);
    CHECK_FALSE(by_count.conversation("k", "resp_0"));
    CHECK_FALSE(by_count.item("k", "m0"));
    CHECK(by_count.conversation("k", "resp_2"));

    const std::size_t one = response_store::entry_overhead + std::string("k").size() + 6 +
                            conv.size() + 2 + outs("m0")[0].second.size();
    response_store by_bytes({100, 3600s, 2 * one + 1});
    for (int i = 0; i < 3; ++i)
        by_bytes.put("k", "resp_" + std::to_string(i), conv, outs("m" + std::to_string(i)));
    CHECK(by_bytes.size() == 2);
    CHECK(by_bytes.bytes() <= 2 * one + 1);
    CHECK_FALSE(by_bytes.conversation("k", "resp_0"));

    response_store tiny({100, 3600s, 10});
    tiny.put("k", "resp_0", conv, outs("m0"));
    CHECK(tiny.size() == 0);
    CHECK_FALSE(tiny.conversation("k", "resp_0"));
}

TEST_CASE("response store: each key has its own count and bytes, so one key's flood evicts only "
          "its own replies") {
    // Per key: 3 replies. One key storing 1,000 replies keeps its newest 3 and every other key
    // keeps all of its own (the store was global before: the flood evicted them).
    response_store s({3, 3600s, 1 << 20, 1 << 24});
    s.put("quiet", "resp_q0", conv, outs("q0"));
    s.put("quiet", "resp_q1", conv, outs("q1"));
    for (int i = 0; i < 1000; ++i)
        s.put("flood", "resp_" + std::to_string(i), conv, outs("f" + std::to_string(i)));
    CHECK(s.conversation("quiet", "resp_q0"));
    CHECK(s.conversation("quiet", "resp_q1"));
    CHECK(s.item("quiet", "q0"));
    CHECK(s.held_by("flood").first == 3);
    CHECK(s.conversation("flood", "resp_999"));
    CHECK_FALSE(s.conversation("flood", "resp_996"));
    CHECK(s.size() == 5);
    CHECK(s.evictions() == 997);

    // Per key by bytes: a key's big replies push out its own oldest, not another key's.
    const std::string big(4000, 'x');
    response_store b({1000, 3600s, 10000, 1 << 24});
    b.put("quiet", "resp_q", conv, outs("q"));
    for (int i = 0; i < 80; ++i)
        b.put("flood", "resp_" + std::to_string(i), "[\"" + big + "\"]", outs("f"));
    CHECK(b.conversation("quiet", "resp_q"));
    CHECK(b.held_by("flood").second <= 10000);
    CHECK(b.held_by("flood").first == 2);
}

TEST_CASE("response store: past the total, the key holding the most bytes gives up its oldest") {
    const std::string text(1000, 'x');
    const std::string items = "[\"" + text + "\"]";
    // Each reply is about 1.3 KB with its overhead; the total holds about 9 of them, a key 6.
    response_store s({100, 3600s, 8000, 12000});
    for (int i = 0; i < 3; ++i)
        s.put("a", "resp_a" + std::to_string(i), items, outs("a" + std::to_string(i)));
    for (int i = 0; i < 3; ++i)
        s.put("b", "resp_b" + std::to_string(i), items, outs("b" + std::to_string(i)));
    // "c" floods: it reaches its own bound, then the total; its own oldest go each time, since
    // it holds the most, and a and b keep all three of theirs.
    for (int i = 0; i < 50; ++i)
        s.put("c", "resp_c" + std::to_string(i), items, outs("c" + std::to_string(i)));
    CHECK(s.bytes() <= 12000);
    CHECK(s.held_by("a").first == 3);
    CHECK(s.held_by("b").first == 3);
    CHECK(s.conversation("c", "resp_c49"));
    CHECK_FALSE(s.conversation("c", "resp_c0"));
    // Now "a" stores more: past the total it holds the most, so it loses its own oldest.
    const auto c_held = s.held_by("c");
    for (int i = 3; i < 6; ++i)
        s.put("a", "resp_a" + std::to_string(i), items, outs("a" + std::to_string(i)));
    CHECK(s.bytes() <= 12000);
    CHECK(s.held_by("b").first == 3);
    CHECK(s.held_by("c") == c_held);
    CHECK(s.conversation("a", "resp_a5"));
    CHECK_FALSE(s.conversation("a", "resp_a0"));
}

TEST_CASE("responses expansion: previous_response_id goes before the input, item_reference is "
          "the stored item, store false is not kept") {
    response_store s({10, 3600s, 1 << 20});
    s.put("k1", "resp_1", conv, outs("msg_a"));

    auto plain = expand_ok(s, R"({"input":"again"})");
    CHECK(plain.store);
    CHECK(plain.body == R"({"input":"again"})"); // nothing to fill in: the body as sent
    CHECK(json::parse(plain.input_items) ==
          json::parse(R"([{"type":"message","role":"user","content":"again"}])"));

    auto chained = expand_ok(s, R"({"previous_response_id":"resp_1","input":"again"})");
    const auto body = json::parse(chained.body).as_object();
    CHECK_FALSE(body.contains("previous_response_id"));
    const auto& input = body.at("input").as_array();
    REQUIRE(input.size() == 3);
    CHECK(input[0].at("content") == "hi");
    CHECK(input[1].at("id") == "msg_a");
    CHECK(input[2].at("content") == "again");
    CHECK(json::parse(chained.input_items) == body.at("input"));

    auto referenced = expand_ok(
        s, R"({"input":[{"type":"item_reference","id":"msg_a"},{"role":"user","content":"x"}]})");
    const auto items = json::parse(referenced.body).at("input").as_array();
    CHECK(items[0].at("type") == "message");
    CHECK(items[0].at("content") == "yo");

    CHECK_FALSE(expand_ok(s, R"({"input":"x","store":false})").store);
}

TEST_CASE("responses expansion: a name that is not kept (another key's, unknown, store off) is a "
          "400 naming the field, and so is a chain past the body limit") {
    response_store s({10, 3600s, 1 << 20});
    s.put("k1", "resp_1", conv, outs("msg_a"));
    auto other = expand_error(s, R"({"previous_response_id":"resp_1","input":"x"})", "k2");
    CHECK(other.status == 400);
    CHECK(other.param == "previous_response_id");
    CHECK(other.message.find("resp_1") != std::string::npos);
    CHECK(other.suggestion.find("3600 s") != std::string::npos);
    auto unknown_item = expand_error(s, R"({"input":[{"type":"item_reference","id":"fc_9"}]})");
    CHECK(unknown_item.param == "input");
    CHECK(unknown_item.message.find("input[0]") != std::string::npos);
    CHECK(expand_error(s, R"({"input":[{"type":"item_reference"}]})").param == "input");
    CHECK(expand_error(s, R"({"previous_response_id":7,"input":"x"})").param ==
          "previous_response_id");
    auto big = expand_error(s, R"({"previous_response_id":"resp_1","input":"x"})", "k1", 40);
    CHECK(big.param == "previous_response_id");
    CHECK(big.message.find("body limit") != std::string::npos);

    response_store off({0, 3600s, 1 << 20});
    off.put("k1", "resp_1", conv, outs("msg_a"));
    auto refused = expand_error(off, R"({"previous_response_id":"resp_1","input":"x"})");
    CHECK(refused.suggestion.find("stores no replies") != std::string::npos);
    CHECK_FALSE(expand_ok(off, R"({"input":"x"})").store);
    // Not JSON, or no object: unchanged, for the parser to refuse.
    CHECK(expand_ok(s, "[1,").body == "[1,");
}

TEST_CASE("response store: the response object and its input items, per key, until erased") {
    response_store s({10, 3600s, 1 << 20});
    const std::string object = R"({"id":"resp_1","object":"response"})";
    const std::string input =
        R"([{"type":"message","role":"user","content":"hi","id":"msg_1_in0"}])";
    s.put("k1", "resp_1", conv, outs("msg_a"), object, input);
    CHECK(s.response("k1", "resp_1") == object);
    CHECK(s.input_items("k1", "resp_1") == input);
    CHECK_FALSE(s.response("k2", "resp_1")); // another key's
    CHECK_FALSE(s.input_items("k2", "resp_1"));
    CHECK(s.item("k1", "msg_a"));
    const auto bytes = s.bytes();
    CHECK(bytes >= object.size() + input.size() + conv.size());
    CHECK_FALSE(s.erase("k2", "resp_1"));
    CHECK(s.erase("k1", "resp_1"));
    CHECK_FALSE(s.response("k1", "resp_1"));
    CHECK_FALSE(s.conversation("k1", "resp_1"));
    CHECK_FALSE(s.item("k1", "msg_a")); // its items go with it
    CHECK(s.size() == 0);
    CHECK(s.bytes() == 0);
    CHECK_FALSE(s.erase("k1", "resp_1"));
    // Stored without them (the old form): the conversation is there, the object is not.
    s.put("k1", "resp_2", conv, outs("msg_b"));
    CHECK(s.conversation("k1", "resp_2"));
    CHECK_FALSE(s.response("k1", "resp_2"));
}

TEST_CASE("responses expansion: the request's own input, without the stored conversation") {
    response_store s({10, 3600s, 1 << 20});
    s.put("k1", "resp_1", conv, outs("msg_a"));
    const auto x = expand_ok(s, R"({"input":[{"type":"item_reference","id":"msg_a"},
        {"role":"user","content":"more"}],"previous_response_id":"resp_1"})");
    const auto own = json::parse(x.own_input).as_array();
    REQUIRE(own.size() == 2);
    CHECK(own[0].at("id") == "msg_a"); // the reference resolved
    CHECK(own[1].at("content") == "more");
    CHECK(json::parse(x.input_items).as_array().size() == 4); // the conversation first
    // Listed: ids and types given where the client sent none.
    const auto listed = json::parse(stored_input_items(x.own_input, "resp_ab_3")).as_array();
    CHECK(listed[0].at("id") == "msg_a");
    CHECK(listed[1].at("id") == "msg_ab_3_in1");
    CHECK(listed[1].at("type") == "message");
    CHECK(stored_input_items("not json", "resp_1") == "[]");
}

TEST_CASE("responses expansion: item_reference fan-out is bounded as it is resolved, before it "
          "is built") {
    response_store s({10, 3600s, 64u << 20, 256u << 20});
    const std::string big(8000, 'x');
    s.put("k1", "resp_1", conv,
          {{"msg_a",
            R"({"id":"msg_a","type":"message","role":"assistant","content":")" + big + R"("})"}});
    // One 8 KB item named 14,978 times: refused at the reference that would pass the limit.
    std::string body = R"({"input":[)";
    for (int i = 0; i < 14978; ++i)
        body += std::string(i ? "," : "") + R"({"type":"item_reference","id":"msg_a"})";
    body += "]}";
    const std::size_t limit = 1u << 20;
    auto fan = expand_error(s, body, "k1", limit);
    CHECK(fan.status == 400);
    CHECK(fan.param == "input");
    CHECK(fan.message.find("max_body_bytes") != std::string::npos);
    // It stopped within the limit's worth of items (one reference past what fits), not at the end.
    const auto at = fan.message.find("input[");
    REQUIRE(at != std::string::npos);
    CHECK(std::stoul(fan.message.substr(at + 6)) < 200);

    // The count: more than max_item_references names of a small item is a 400 naming the limit.
    s.put("k1", "resp_2", conv, outs("msg_b"));
    std::string many = R"({"input":[)";
    for (std::size_t i = 0; i <= max_item_references; ++i)
        many += std::string(i ? "," : "") + R"({"type":"item_reference","id":"msg_b"})";
    many += "]}";
    auto counted = expand_error(s, many, "k1", 64u << 20);
    CHECK(counted.param == "input");
    CHECK(counted.message.find("max_item_references") != std::string::npos);
}

TEST_CASE("responses expansion: a chain that holds a deleted reply's text refuses to continue") {
    response_store s({10, 3600s, 1 << 20});
    s.put("k1", "resp_1", conv, outs("msg_a"));
    const auto x = expand_ok(s, R"({"previous_response_id":"resp_1","input":"again"})");
    CHECK(x.continues == std::vector<std::string>{"resp_1"});
    s.put("k1", "resp_2", x.input_items, outs("msg_b"), "{}", "[]", x.continues);
    const auto y = expand_ok(s, R"({"previous_response_id":"resp_2","input":"more"})");
    CHECK(y.continues == std::vector<std::string>{"resp_1", "resp_2"});
    s.put("k1", "resp_3", y.input_items, outs("msg_c"), "{}", "[]", y.continues);
    // A reply that referenced resp_1's item holds its text too.
    const auto r = expand_ok(s, R"({"input":[{"type":"item_reference","id":"msg_a"}]})");
    CHECK(r.continues == std::vector<std::string>{"resp_1"});
    s.put("k1", "resp_4", r.input_items, outs("msg_d"), "{}", "[]", r.continues);
    s.put("k1", "resp_5", conv, outs("msg_e")); // not built on resp_1

    REQUIRE(s.erase("k1", "resp_1"));
    for (const char* id : {"resp_2", "resp_3", "resp_4"}) {
        auto e =
            expand_error(s, R"({"previous_response_id":")" + std::string(id) + R"(","input":"x"})");
        CHECK(e.status == 400);
        CHECK(e.param == "previous_response_id");
        CHECK(e.message.find("resp_1") != std::string::npos);
        CHECK(e.message.find("deleted") != std::string::npos);
    }
    expand_ok(s, R"({"previous_response_id":"resp_5","input":"x"})");
    CHECK(s.item("k1", "msg_b")); // its own items are still its own
}

TEST_CASE("input_items pages: order, limit and after, as OpenAI's list object") {
    const std::string items = R"([{"id":"a"},{"id":"b"},{"id":"c"}])";
    auto page = [&](std::string_view order, std::string_view limit, std::string_view after) {
        auto r = input_items_page(items, order, limit, after);
        REQUIRE(std::holds_alternative<std::string>(r));
        return json::parse(std::get<std::string>(r)).as_object();
    };
    auto p = page("", "", "");
    CHECK(p.at("object") == "list");
    CHECK(p.at("data") == json::parse(R"([{"id":"c"},{"id":"b"},{"id":"a"}])")); // desc default
    CHECK(p.at("first_id") == "c");
    CHECK(p.at("last_id") == "a");
    CHECK(p.at("has_more") == false);
    p = page("asc", "2", "");
    CHECK(p.at("data") == json::parse(R"([{"id":"a"},{"id":"b"}])"));
    CHECK(p.at("has_more") == true);
    p = page("asc", "2", "b");
    CHECK(p.at("data") == json::parse(R"([{"id":"c"}])"));
    CHECK(p.at("has_more") == false);
    p = page("asc", "", "c");
    CHECK(p.at("data") == json::array{});
    CHECK(p.at("first_id").is_null());
    for (auto [order, limit, after, param] :
         {std::tuple{"up", "", "", "order"}, std::tuple{"asc", "0", "", "limit"},
          std::tuple{"asc", "101", "", "limit"}, std::tuple{"asc", "x", "", "limit"},
          std::tuple{"asc", "", "zz", "after"}}) {
        auto r = input_items_page(items, order, limit, after);
        REQUIRE(std::holds_alternative<api_error>(r));
        CHECK(std::get<api_error>(r).param == param);
    }
}
