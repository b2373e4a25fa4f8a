// Anthropic's message threads without a server: what `thread` may say, a continue made whole from
// a stored record (and bounded by the body limit), the record a reply leaves, the refusals'
// details in Anthropic's error body, and the store's side: a thread's reply continued once, held
// while a continue runs, per key, its record freed once continued, apart from the Responses
// replies.
#include "http/anthropic/message_thread.hpp"

#include "http/anthropic/api_anthropic.hpp"
#include "http/responses/response_store.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <variant>

using namespace bitnet::http;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

json::object obj(const std::string& text) {
    return json::parse(text).as_object();
}

api_error read_error(const std::string& body) {
    auto r = read_message_thread(obj(body));
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
}

} // namespace

TEST_CASE("message thread: create, continue and the shapes refused") {
    auto none = read_message_thread(obj(R"({"messages":[],"thread":null})"));
    CHECK(std::get<message_thread>(none).type == message_thread::kind::none);
    auto create = read_message_thread(obj(R"({"thread":{"type":"create"},"system":"s"})"));
    CHECK(std::get<message_thread>(create).type == message_thread::kind::create);
    auto cont = read_message_thread(
        obj(R"({"thread":{"type":"continue","previous_message_id":"msg_1"},"system":null})"));
    CHECK(std::get<message_thread>(cont).type == message_thread::kind::resume);
    CHECK(std::get<message_thread>(cont).previous_message_id == "msg_1");

    CHECK(read_error(R"({"thread":false})").param == "thread");
    CHECK(read_error(R"({"thread":{"type":"branch"}})").param == "thread.type");
    CHECK(read_error(R"({"thread":{"type":"continue"}})").param == "thread.previous_message_id");
    CHECK(read_error(R"({"thread":{"type":"create","previous_message_id":"m"}})").param ==
          "thread.previous_message_id");
    CHECK(read_error(R"({"thread":{"type":"create","fork":true}})").param == "thread.fork");
    const std::string long_id(max_thread_id_bytes + 1, 'a');
    CHECK(read_error(R"({"thread":{"type":"continue","previous_message_id":")" + long_id + "\"}}")
              .param == "thread.previous_message_id");
    // The create-only fields: a continue may not send them.
    CHECK(read_error(R"({"thread":{"type":"continue","previous_message_id":"m"},"system":"s"})")
              .param == "system");
    CHECK(read_error(R"({"thread":{"type":"continue","previous_message_id":"m"},"tools":[]})")
              .param == "tools");
}

TEST_CASE("message thread: a continue is the stored system, tools and messages, then its own") {
    const auto created = expand_message_thread(
        obj(R"({"thread":{"type":"create"},"system":"S","max_tokens":4,)"
            R"("tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"a"}]})"),
        "", 1 << 20);
    const auto& c = std::get<thread_expansion>(created);
    CHECK_FALSE(obj(c.body).contains("thread"));
    const auto record = thread_record(c.head, R"([{"type":"text","text":"b"}])");
    const auto r = obj(record);
    CHECK(r.at("system") == "S");
    REQUIRE(r.at("messages").as_array().size() == 2);
    CHECK(r.at("messages").at(1) ==
          json::parse(R"({"role":"assistant","content":[{"type":"text","text":"b"}]})"));

    const auto continued = expand_message_thread(
        obj(R"({"thread":{"type":"continue","previous_message_id":"m"},"max_tokens":8,)"
            R"("messages":[{"role":"user","content":"c"}]})"),
        record, 1 << 20);
    const auto whole = obj(std::get<thread_expansion>(continued).body);
    CHECK_FALSE(whole.contains("thread"));
    CHECK(whole.at("system") == "S");
    CHECK(whole.at("tools").at(0).at("name") == "f");
    CHECK(whole.at("max_tokens") == 8);
    const auto& msgs = whole.at("messages").as_array();
    REQUIRE(msgs.size() == 3);
    CHECK(msgs[0].at("content") == "a");
    CHECK(msgs[2].at("content") == "c");
    // Its own record starts with all three.
    const auto next = obj(thread_record(std::get<thread_expansion>(continued).head, "[]"));
    CHECK(next.at("messages").as_array().size() == 4);

    // No new messages, or past the body limit: a 400 each.
    auto empty = expand_message_thread(obj(R"({"messages":[]})"), record, 1 << 20);
    CHECK(std::get<api_error>(empty).param == "messages");
    auto big = expand_message_thread(obj(R"({"messages":[{"role":"user","content":"c"}]})"), record,
                                     record.size() - 1);
    REQUIRE(std::holds_alternative<api_error>(big));
    CHECK(std::get<api_error>(big).message.find("max_body_bytes") != std::string::npos);
}

TEST_CASE("message thread: refusals carry error.details.error_code in Anthropic's body") {
    const auto not_found = thread_error(thread_refusal::not_found, "msg_x");
    CHECK(not_found.status == 404);
    CHECK(not_found.final_answer);
    const auto body = json::parse(anthropic_error_body(not_found, "req-1")).as_object();
    CHECK(body.at("error").at("type") == "not_found_error");
    CHECK(body.at("error").at("details").at("error_code") == "thread_not_found");
    const auto twice = json::parse(
        anthropic_error_body(thread_error(thread_refusal::already_continued, "msg_x"), "req-1"));
    CHECK(twice.at("error").at("type") == "invalid_request_error");
    CHECK(twice.at("error").at("details").at("error_code") == "thread_already_continued");
    CHECK(thread_error(thread_refusal::in_flight, "m").status == 409);
    const auto unsupported =
        json::parse(anthropic_error_body(thread_error(thread_refusal::unsupported, ""), "req-1"));
    CHECK(unsupported.at("error").at("details").at("unsupported") == json::parse(R"(["thread"])"));
    // Other errors have no details.
    CHECK_FALSE(json::parse(anthropic_error_body(invalid_value("x", "bad"), "req-1"))
                    .at("error")
                    .as_object()
                    .contains("details"));
}

TEST_CASE("response store: a thread's reply is continued once, held while a continue runs, for "
          "its own key") {
    response_store s({10, 60s, 1 << 20});
    using state = response_store::thread_state;
    const std::string record(1000, 'r');
    s.put_thread("k1", "msg_1", record);
    CHECK(s.claim_thread("k2", "msg_1").state == state::not_found);
    CHECK(s.claim_thread("k1", "msg_2").state == state::not_found);
    {
        auto held = s.claim_thread("k1", "msg_1");
        REQUIRE(held.state == state::claimed);
        CHECK(held.record == record);
        CHECK(s.claim_thread("k1", "msg_1").state == state::in_flight);
    }
    // The continue ended without a reply: it may be continued again.
    auto held = s.claim_thread("k1", "msg_1");
    REQUIRE(held.state == state::claimed);
    const auto before = s.held_by("k1").second;
    s.put_thread("k1", "msg_2", record + "more", "msg_1");
    held.hold.reset();
    CHECK(s.claim_thread("k1", "msg_1").state == state::already_continued);
    // The continued reply keeps only its id: the key holds about one record, not two.
    CHECK(s.held_by("k1").second < before + record.size());
    CHECK(s.claim_thread("k1", "msg_2").state == state::claimed);

    // The Responses routes never see a thread's reply.
    CHECK_FALSE(s.conversation("k1", "msg_2"));
    CHECK_FALSE(s.chain("k1", "msg_2"));
    CHECK_FALSE(s.erase("k1", "msg_2"));
    // Expiry as for any reply.
    const auto later = response_store::clock::now() + 61s;
    CHECK(s.claim_thread("k1", "msg_2", later).state == state::not_found);
    CHECK(s.size() == 0);
}

TEST_CASE("response store: threads count toward their key's bounds, the oldest going first") {
    response_store s({2, 3600s, 1 << 20});
    for (int i = 0; i < 3; ++i)
        s.put_thread("k", "msg_" + std::to_string(i), "{}");
    CHECK(s.claim_thread("k", "msg_0").state == response_store::thread_state::not_found);
    CHECK(s.claim_thread("k", "msg_2").state == response_store::thread_state::claimed);
    response_store tiny({10, 3600s, 2000});
    tiny.put_thread("k", "msg_big", std::string(4000, 'x')); // alone past the key's bytes
    CHECK(tiny.claim_thread("k", "msg_big").state == response_store::thread_state::not_found);
    CHECK(tiny.bytes() == 0);
}
